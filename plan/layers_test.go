package plan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestPhysicalLayer keeps physical planning out of the logical layer: only
// the physical planner, the builder, EXPLAIN and the Query that holds the
// batch plan name the types declared in physical.go. The binder, the
// rules and the streaming planner work on logical nodes alone.
func TestPhysicalLayer(t *testing.T) {
	fset := token.NewFileSet()
	phys, err := parser.ParseFile(fset, "physical.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, d := range phys.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			for _, s := range g.Specs {
				if n := s.(*ast.TypeSpec).Name.Name; ast.IsExported(n) {
					names[n] = true
				}
			}
		}
	}
	if !names["PhysicalNode"] || !names["HashJoin"] {
		t.Fatalf("physical.go declares %v: the test reads the wrong file", names)
	}
	allowed := func(f string) bool {
		return strings.HasPrefix(f, "physical") || f == "build.go" || f == "explain.go" || f == "cte.go" || f == "plan.go"
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || allowed(f) {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(file, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && names[id.Name] {
				t.Errorf("%s: the logical layer names the physical type %s", fset.Position(id.Pos()), id.Name)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files: the test reads the wrong directory", checked)
	}
}

// TestRuleNames: every switch is named once, and a rule needs only rules
// that can be switched.
func TestRuleNames(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules {
		if seen[r] {
			t.Errorf("rule %s listed twice", r)
		}
		seen[r] = true
	}
	for _, r := range logicalRules {
		if r.required == seen[r.name] {
			t.Errorf("rule %s: required %v, yet switchable %v", r.name, r.required, seen[r.name])
		}
		for _, n := range r.needs {
			if !seen[n] {
				t.Errorf("rule %s needs %s, which is no switchable rule", r.name, n)
			}
		}
	}
}
