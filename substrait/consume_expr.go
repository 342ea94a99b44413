package substrait

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/sql"
)

// extensions reads the plan's function declarations. Plans of producers
// that still send extension URIs (Substrait before 0.74, DataFusion) carry
// them in fields this protobuf version no longer has: read those from the
// unknown fields and treat a standard extension's URI as its URN.
func (c *consumer) extensions(p *pb.Plan) error {
	urns := map[uint32]string{}
	for _, u := range p.GetExtensionUrns() {
		urns[u.GetExtensionUrnAnchor()] = u.GetUrn()
	}
	uris, err := legacyURIs(p.ProtoReflect().GetUnknown())
	if err != nil {
		return err
	}
	for i, d := range p.GetExtensions() {
		f := d.GetExtensionFunction()
		if f == nil {
			continue // types and variations: refused where used
		}
		urn, ok := urns[f.GetExtensionUrnReference()]
		if !ok || f.GetExtensionUrnReference() == 0 && len(urns) == 0 {
			ref, err := legacyURIRef(f.ProtoReflect().GetUnknown())
			if err != nil {
				return errAt(fmt.Sprintf("extensions[%d]", i), "%v", err)
			}
			// A function whose extension the plan does not declare
			// (DataFusion declares none) is looked up by name among the
			// standard ones: urn stays "".
			if uri, found := uris[ref]; found {
				urn = uriToURN(uri)
			}
		}
		name, _, _ := strings.Cut(f.GetName(), ":")
		if !plainName(name) {
			return errAt(fmt.Sprintf("extensions[%d].extension_function", i), "function name %q is not a plain name", f.GetName())
		}
		c.funcs[f.GetFunctionAnchor()] = function{urn: urn, name: strings.ToLower(name)}
	}
	return nil
}

// legacyURIs decodes Plan field 1 (repeated SimpleExtensionURI{anchor = 1,
// uri = 2}) from a plan's unknown fields.
func legacyURIs(b []byte) (map[uint32]string, error) {
	out := map[uint32]string{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: plan: %v", ErrInvalid, protowire.ParseError(n))
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, fmt.Errorf("%w: plan: %v", ErrInvalid, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		msg, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: plan.extension_uris: %v", ErrInvalid, protowire.ParseError(n))
		}
		b = b[n:]
		var anchor uint64
		var uri string
		for len(msg) > 0 {
			fnum, ftyp, m := protowire.ConsumeTag(msg)
			if m < 0 {
				return nil, fmt.Errorf("%w: plan.extension_uris: %v", ErrInvalid, protowire.ParseError(m))
			}
			msg = msg[m:]
			switch {
			case fnum == 1 && ftyp == protowire.VarintType:
				anchor, m = protowire.ConsumeVarint(msg)
			case fnum == 2 && ftyp == protowire.BytesType:
				var v []byte
				v, m = protowire.ConsumeBytes(msg)
				uri = string(v)
			default:
				m = protowire.ConsumeFieldValue(fnum, ftyp, msg)
			}
			if m < 0 {
				return nil, fmt.Errorf("%w: plan.extension_uris: %v", ErrInvalid, protowire.ParseError(m))
			}
			msg = msg[m:]
		}
		out[uint32(anchor)] = uri
	}
	return out, nil
}

// legacyURIRef decodes ExtensionFunction field 1 (extension_uri_reference).
func legacyURIRef(b []byte) (uint32, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		b = b[n:]
		if num == 1 && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, protowire.ParseError(m)
			}
			return uint32(v), nil
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0, protowire.ParseError(m)
		}
		b = b[m:]
	}
	return 0, nil
}

// uriToURN names a standard extension file (any URL or path ending in
// functions_x.yaml) by its URN; other URIs stay as they are.
func uriToURN(uri string) string {
	base := uri[strings.LastIndexAny(uri, "/:")+1:]
	if stem, ok := strings.CutSuffix(base, ".yaml"); ok && strings.HasPrefix(stem, "functions_") {
		return "extension:io.substrait:" + stem
	}
	return uri
}

// expr translates an expression over the columns cols.
func (c *consumer) expr(x *pb.Expression, cols []sql.Expr, path string) (sql.Expr, error) {
	if x == nil || x.GetRexType() == nil {
		return nil, errAt(path, "missing expression")
	}
	if err := c.enter(path); err != nil {
		return nil, err
	}
	defer func() { c.depth-- }()
	switch t := x.GetRexType().(type) {
	case *pb.Expression_Literal_:
		return c.literal(t.Literal, path+".literal")
	case *pb.Expression_Selection:
		return c.field(t.Selection, cols, path+".selection")
	case *pb.Expression_ScalarFunction_:
		return c.scalar(t.ScalarFunction, cols, path+".scalar_function")
	case *pb.Expression_WindowFunction_:
		f := t.WindowFunction
		call, err := c.windowCall(f.GetFunctionReference(), f.GetArguments(), f.GetInvocation(), cols, path+".window_function")
		if err != nil {
			return nil, err
		}
		spec := &sql.WindowSpec{}
		for i, p := range f.GetPartitions() {
			e, err := c.expr(p, cols, fmt.Sprintf("%s.window_function.partitions[%d]", path, i))
			if err != nil {
				return nil, err
			}
			spec.PartitionBy = append(spec.PartitionBy, e)
		}
		if spec.OrderBy, err = c.sortKeys(f.GetSorts(), cols, path+".window_function.sorts"); err != nil {
			return nil, err
		}
		if spec.Frame, err = c.frame(f.GetBoundsType(), f.GetLowerBound(), f.GetUpperBound(), len(spec.OrderBy) > 0, path+".window_function"); err != nil {
			return nil, err
		}
		call.Over = spec
		return call, nil
	case *pb.Expression_IfThen_:
		cs := &sql.Case{}
		ifs := t.IfThen.GetIfs()
		if len(ifs) > 1 && ifs[0].GetThen() == nil {
			// DataFusion writes CASE x WHEN v THEN r as a first clause
			// holding only x, then clauses of values.
			op, err := c.expr(ifs[0].GetIf(), cols, path+".if_then.ifs[0].if")
			if err != nil {
				return nil, err
			}
			cs.Operand = op
		}
		for i, w := range ifs {
			if i == 0 && cs.Operand != nil {
				continue
			}
			cond, err := c.expr(w.GetIf(), cols, fmt.Sprintf("%s.if_then.ifs[%d].if", path, i))
			if err != nil {
				return nil, err
			}
			then, err := c.expr(w.GetThen(), cols, fmt.Sprintf("%s.if_then.ifs[%d].then", path, i))
			if err != nil {
				return nil, err
			}
			cs.Whens = append(cs.Whens, &sql.When{Cond: cond, Then: then})
		}
		if len(cs.Whens) == 0 {
			return nil, errAt(path+".if_then", "no if clauses")
		}
		if t.IfThen.GetElse() != nil {
			var err error
			if cs.Else, err = c.expr(t.IfThen.GetElse(), cols, path+".if_then.else"); err != nil {
				return nil, err
			}
		}
		return cs, nil
	case *pb.Expression_SwitchExpression_:
		sw := t.SwitchExpression
		match, err := c.expr(sw.GetMatch(), cols, path+".switch_expression.match")
		if err != nil {
			return nil, err
		}
		cs := &sql.Case{Operand: match}
		for i, w := range sw.GetIfs() {
			v, err := c.literal(w.GetIf(), fmt.Sprintf("%s.switch_expression.ifs[%d].if", path, i))
			if err != nil {
				return nil, err
			}
			then, err := c.expr(w.GetThen(), cols, fmt.Sprintf("%s.switch_expression.ifs[%d].then", path, i))
			if err != nil {
				return nil, err
			}
			cs.Whens = append(cs.Whens, &sql.When{Cond: v, Then: then})
		}
		if len(cs.Whens) == 0 {
			return nil, errAt(path+".switch_expression", "no if clauses")
		}
		if sw.GetElse() != nil {
			if cs.Else, err = c.expr(sw.GetElse(), cols, path+".switch_expression.else"); err != nil {
				return nil, err
			}
		}
		return cs, nil
	case *pb.Expression_SingularOrList_:
		v, err := c.expr(t.SingularOrList.GetValue(), cols, path+".singular_or_list.value")
		if err != nil {
			return nil, err
		}
		in := &sql.InList{X: v}
		for i, o := range t.SingularOrList.GetOptions() {
			e, err := c.expr(o, cols, fmt.Sprintf("%s.singular_or_list.options[%d]", path, i))
			if err != nil {
				return nil, err
			}
			in.List = append(in.List, e)
		}
		if len(in.List) == 0 {
			return nil, errAt(path+".singular_or_list", "no options")
		}
		return in, nil
	case *pb.Expression_Cast_:
		in, err := c.expr(t.Cast.GetInput(), cols, path+".cast.input")
		if err != nil {
			return nil, err
		}
		tn, err := typeName(t.Cast.GetType(), path+".cast.type")
		if err != nil {
			return nil, err
		}
		return &sql.Cast{X: in, Type: tn, Try: t.Cast.GetFailureBehavior() == pb.Expression_Cast_FAILURE_BEHAVIOR_RETURN_NULL}, nil
	case *pb.Expression_Subquery_:
		return c.subquery(t.Subquery, cols, path+".subquery")
	case *pb.Expression_DynamicParameter:
		ref := t.DynamicParameter.GetParameterReference()
		if ref >= 65535 {
			return nil, errAt(path+".dynamic_parameter", "parameter_reference %d is out of range", ref)
		}
		return &sql.Param{Index: int(ref) + 1}, nil
	case *pb.Expression_Nested_:
		if l := t.Nested.GetList(); l != nil {
			arr := &sql.Collection{Kind: "ARRAY"}
			for i, v := range l.GetValues() {
				e, err := c.expr(v, cols, fmt.Sprintf("%s.nested.list.values[%d]", path, i))
				if err != nil {
					return nil, err
				}
				arr.Elems = append(arr.Elems, e)
			}
			return arr, nil
		}
		return nil, errAt(path+".nested", "only nested lists are supported")
	}
	return nil, errAt(path, "expression %s is not supported", strings.TrimPrefix(fmt.Sprintf("%T", x.GetRexType()), "*substraitpb.Expression_"))
}

func (c *consumer) field(x *pb.Expression_FieldReference, cols []sql.Expr, path string) (sql.Expr, error) {
	d := x.GetDirectReference()
	sf := d.GetStructField()
	if sf == nil {
		return nil, errAt(path, "only direct references to a field are supported")
	}
	if sf.GetChild() != nil {
		return nil, errAt(path+".direct_reference.struct_field.child", "references into nested fields are not supported")
	}
	switch t := x.GetRootType().(type) {
	case *pb.Expression_FieldReference_RootReference_, nil:
	case *pb.Expression_FieldReference_OuterReference_:
		steps := int(t.OuterReference.GetStepsOut())
		if steps < 1 || steps > len(c.outer) {
			return nil, errAt(path+".outer_reference", "steps_out %d, but the reference is %d subqueries deep", steps, len(c.outer))
		}
		cols = c.outer[len(c.outer)-steps]
	default:
		return nil, errAt(path, "field reference root %T is not supported", t)
	}
	f := int(sf.GetField())
	if f < 0 || f >= len(cols) {
		return nil, errAt(path+".direct_reference.struct_field", "field %d is out of range (%d columns)", f, len(cols))
	}
	if err := c.charge(cols[f], path); err != nil {
		return nil, err
	}
	return cols[f], nil
}

func (c *consumer) subquery(x *pb.Expression_Subquery, cols []sql.Expr, path string) (sql.Expr, error) {
	c.outer = append(c.outer, cols)
	defer func() { c.outer = c.outer[:len(c.outer)-1] }()
	query := func(in *pb.Rel, p string, n int) (*sql.Query, error) {
		r, err := c.rel(in, p)
		if err != nil {
			return nil, err
		}
		if n > 0 && len(r.cols) != n {
			return nil, errAt(p, "the subquery has %d columns, not %d", len(r.cols), n)
		}
		return r.query(), nil
	}
	switch t := x.GetSubqueryType().(type) {
	case *pb.Expression_Subquery_Scalar_:
		q, err := query(t.Scalar.GetInput(), path+".scalar.input", 1)
		if err != nil {
			return nil, err
		}
		return &sql.Subquery{Query: q}, nil
	case *pb.Expression_Subquery_InPredicate_:
		needles := t.InPredicate.GetNeedles()
		if len(needles) != 1 {
			return nil, errAt(path+".in_predicate.needles", "%d needles: only one is supported", len(needles))
		}
		c.outer = c.outer[:len(c.outer)-1] // needles are in the enclosing scope
		v, err := c.expr(needles[0], cols, path+".in_predicate.needles[0]")
		c.outer = append(c.outer, cols)
		if err != nil {
			return nil, err
		}
		q, err := query(t.InPredicate.GetHaystack(), path+".in_predicate.haystack", 1)
		if err != nil {
			return nil, err
		}
		return &sql.InSubquery{X: v, Query: q}, nil
	case *pb.Expression_Subquery_SetPredicate_:
		if t.SetPredicate.GetPredicateOp() != pb.Expression_Subquery_SetPredicate_PREDICATE_OP_EXISTS {
			return nil, errAt(path+".set_predicate", "predicate %s is not supported (EXISTS is)", t.SetPredicate.GetPredicateOp())
		}
		q, err := query(t.SetPredicate.GetTuples(), path+".set_predicate.tuples", 0)
		if err != nil {
			return nil, err
		}
		return &sql.Exists{Query: q}, nil
	}
	return nil, errAt(path, "subquery %T is not supported (scalar, IN and EXISTS are)", x.GetSubqueryType())
}

func (c *consumer) args(l []*pb.FunctionArgument, cols []sql.Expr, path string) ([]sql.Expr, []string, error) {
	var out []sql.Expr
	var enums []string
	for i, a := range l {
		ap := fmt.Sprintf("%s.arguments[%d]", path, i)
		switch t := a.GetArgType().(type) {
		case *pb.FunctionArgument_Value:
			e, err := c.expr(t.Value, cols, ap+".value")
			if err != nil {
				return nil, nil, err
			}
			out = append(out, e)
		case *pb.FunctionArgument_Enum:
			enums = append(enums, strings.ToUpper(t.Enum))
		default:
			return nil, nil, errAt(ap, "argument kind %T is not supported", t)
		}
	}
	return out, enums, nil
}

func (c *consumer) fn(ref uint32, path string) (function, error) {
	f, ok := c.funcs[ref]
	if !ok {
		return f, errAt(path, "function_reference %d is not declared in the plan's extensions", ref)
	}
	if f.urn != "" && f.urn != flightdURN && !strings.HasPrefix(f.urn, "extension:io.substrait:") {
		return f, errAt(path, "function %q of extension %q: only the standard extensions (extension:io.substrait:functions_*) are supported", f.name, f.urn)
	}
	return f, nil
}

func (c *consumer) scalar(x *pb.Expression_ScalarFunction, cols []sql.Expr, path string) (sql.Expr, error) {
	f, err := c.fn(x.GetFunctionReference(), path)
	if err != nil {
		return nil, err
	}
	args, enums, err := c.args(x.GetArguments(), cols, path)
	if err != nil {
		return nil, err
	}
	e, err := scalarCall(f.name, args, enums)
	if err != nil {
		return nil, errAt(path, "function %s (%s): %v", f.name, f.urn, err)
	}
	return e, nil
}

var binaryOps = map[string]string{
	"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulus": "%", "modulo": "%", "mod": "%",
	"equal": "=", "not_equal": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=",
	"less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">=",
}

// renames are standard (or DataFusion) function names whose flightd
// function has another name.
var renames = map[string]string{
	"char_length": "char_length", "characters": "char_length", "length": "char_length",
	"substr": "substring", "strpos": "position", "ln": "ln", "power": "power", "pow": "power",
	"std_dev": "stddev_samp", "variance": "var_samp", "approx_count_distinct": "approx_count_distinct",
}

func scalarCall(name string, args []sql.Expr, enums []string) (sql.Expr, error) {
	need := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("%d arguments, want %d", len(args), n)
		}
		return nil
	}
	if op, ok := binaryOps[name]; ok {
		if err := need(2); err != nil {
			return nil, err
		}
		return &sql.Binary{Op: op, Left: args[0], Right: args[1]}, nil
	}
	switch name {
	case "and", "or", "concat":
		if len(args) == 0 {
			return nil, fmt.Errorf("no arguments")
		}
		op := map[string]string{"and": "AND", "or": "OR", "concat": "||"}[name]
		out := args[0]
		for _, a := range args[1:] {
			out = &sql.Binary{Op: op, Left: out, Right: a}
		}
		return out, nil
	case "not", "negate":
		if err := need(1); err != nil {
			return nil, err
		}
		return &sql.Unary{Op: map[string]string{"not": "NOT", "negate": "-"}[name], X: args[0]}, nil
	case "is_null", "is_not_null", "is_true", "is_false", "is_not_true", "is_not_false":
		if err := need(1); err != nil {
			return nil, err
		}
		not := strings.HasPrefix(name, "is_not_")
		what := strings.ToUpper(strings.TrimPrefix(strings.TrimPrefix(name, "is_not_"), "is_"))
		return &sql.Is{Not: not, X: args[0], What: what}, nil
	case "is_distinct_from", "is_not_distinct_from":
		if err := need(2); err != nil {
			return nil, err
		}
		return &sql.Is{Not: name == "is_not_distinct_from", X: args[0], What: "DISTINCT FROM", Y: args[1]}, nil
	case "between":
		if err := need(3); err != nil {
			return nil, err
		}
		return &sql.Between{X: args[0], Lo: args[1], Hi: args[2]}, nil
	case "like", "ilike":
		if len(args) != 2 && len(args) != 3 {
			return nil, fmt.Errorf("%d arguments, want 2 or 3", len(args))
		}
		l := &sql.Like{X: args[0], Pattern: args[1], Insensitive: name == "ilike"}
		if len(args) == 3 && !isNull(args[2]) {
			l.Escape = args[2] // DataFusion sends a NULL escape for none
		}
		return l, nil
	}
	if unitFirst[name] {
		// The unit: an enum argument, or (older producers) a string.
		if len(enums) == 0 && len(args) > 0 {
			if l, ok := args[0].(*sql.Literal); ok && l.Kind == sql.LitString {
				enums, args = []string{strings.ToUpper(l.Value)}, args[1:]
			}
		}
		if len(enums) != 1 {
			return nil, fmt.Errorf("want a unit (an enum argument)")
		}
		if !plainName(enums[0]) {
			// EXTRACT prints its unit as a bare word.
			return nil, fmt.Errorf("unit %q is not a plain name", enums[0])
		}
		if name == "extract" {
			if len(args) != 1 {
				return nil, fmt.Errorf("want a unit and one value")
			}
			return &sql.Extract{Field: enums[0], X: args[0]}, nil
		}
		args = append([]sql.Expr{&sql.Ident{Parts: []string{enums[0]}}}, args...)
	}
	if r, ok := renames[name]; ok {
		name = r
	}
	return &sql.FuncCall{Name: name, Args: args}, nil
}

func (c *consumer) aggCall(m *pb.AggregateFunction, cols []sql.Expr, path string) (*sql.FuncCall, error) {
	if m == nil {
		return nil, errAt(path, "missing")
	}
	if len(m.GetSorts()) > 0 {
		return nil, errAt(path+".sorts", "ordered aggregates are not supported")
	}
	return c.windowCall(m.GetFunctionReference(), m.GetArguments(), m.GetInvocation(), cols, path)
}

// windowCall is an aggregate or window function call without OVER.
func (c *consumer) windowCall(ref uint32, argl []*pb.FunctionArgument, inv pb.AggregateFunction_AggregationInvocation, cols []sql.Expr, path string) (*sql.FuncCall, error) {
	f, err := c.fn(ref, path)
	if err != nil {
		return nil, err
	}
	args, _, err := c.args(argl, cols, path)
	if err != nil {
		return nil, err
	}
	name := f.name
	if r, ok := renames[name]; ok {
		name = r
	}
	call := &sql.FuncCall{Name: name, Args: args, Distinct: inv == pb.AggregateFunction_AGGREGATION_INVOCATION_DISTINCT}
	if name == "count" && len(args) == 0 {
		call.Star = true
	}
	return call, nil
}

func (c *consumer) frame(bt pb.Expression_WindowFunction_BoundsType, lo, hi *pb.Expression_WindowFunction_Bound, ordered bool, path string) (*sql.Frame, error) {
	if lo == nil && hi == nil {
		return nil, nil // the SQL default
	}
	unit := "ROWS"
	if bt == pb.Expression_WindowFunction_BOUNDS_TYPE_RANGE || bt == pb.Expression_WindowFunction_BOUNDS_TYPE_UNSPECIFIED {
		unit = "RANGE"
	}
	bound := func(b *pb.Expression_WindowFunction_Bound, start bool) (*sql.FrameBound, error) {
		switch t := b.GetKind().(type) {
		case nil:
			if start {
				return &sql.FrameBound{Kind: "UNBOUNDED PRECEDING"}, nil
			}
			if ordered {
				return &sql.FrameBound{Kind: "CURRENT ROW"}, nil
			}
			return &sql.FrameBound{Kind: "UNBOUNDED FOLLOWING"}, nil
		case *pb.Expression_WindowFunction_Bound_CurrentRow_:
			return &sql.FrameBound{Kind: "CURRENT ROW"}, nil
		case *pb.Expression_WindowFunction_Bound_Unbounded_:
			if start {
				return &sql.FrameBound{Kind: "UNBOUNDED PRECEDING"}, nil
			}
			return &sql.FrameBound{Kind: "UNBOUNDED FOLLOWING"}, nil
		case *pb.Expression_WindowFunction_Bound_Preceding_:
			if t.Preceding.GetOffset() < 0 {
				return nil, errAt(path, "negative frame offset")
			}
			return &sql.FrameBound{Kind: "PRECEDING", Offset: number64(t.Preceding.GetOffset())}, nil
		case *pb.Expression_WindowFunction_Bound_Following_:
			if t.Following.GetOffset() < 0 {
				return nil, errAt(path, "negative frame offset")
			}
			return &sql.FrameBound{Kind: "FOLLOWING", Offset: number64(t.Following.GetOffset())}, nil
		}
		return nil, errAt(path, "frame bound %T is not supported", b.GetKind())
	}
	s, err := bound(lo, true)
	if err != nil {
		return nil, err
	}
	e, err := bound(hi, false)
	if err != nil {
		return nil, err
	}
	return &sql.Frame{Unit: unit, Start: s, End: e}, nil
}

func number64(n int64) sql.Expr {
	return &sql.Literal{Kind: sql.LitNumber, Value: strconv.FormatInt(n, 10)}
}

func str(s string) sql.Expr { return &sql.Literal{Kind: sql.LitString, Value: s} }

// literal translates a literal, typed as the plan says: numbers carry a
// CAST to their width, so INT stays INT and REAL stays REAL.
func (c *consumer) literal(l *pb.Expression_Literal, path string) (sql.Expr, error) {
	if l == nil || l.GetLiteralType() == nil {
		return nil, errAt(path, "missing literal")
	}
	switch t := l.GetLiteralType().(type) {
	case *pb.Expression_Literal_Boolean:
		return &sql.Literal{Kind: sql.LitBool, Value: strings.ToUpper(strconv.FormatBool(t.Boolean))}, nil
	case *pb.Expression_Literal_I8:
		return typed(number64(int64(int8(t.I8))), "TINYINT"), nil
	case *pb.Expression_Literal_I16:
		return typed(number64(int64(int16(t.I16))), "SMALLINT"), nil
	case *pb.Expression_Literal_I32:
		return typed(number64(int64(t.I32)), "INT"), nil
	case *pb.Expression_Literal_I64:
		return typed(number64(t.I64), "BIGINT"), nil
	case *pb.Expression_Literal_Fp32:
		return floatLit(float64(t.Fp32), "FLOAT", 32), nil
	case *pb.Expression_Literal_Fp64:
		return floatLit(t.Fp64, "DOUBLE", 64), nil
	case *pb.Expression_Literal_String_:
		return str(t.String_), nil
	case *pb.Expression_Literal_VarChar_:
		if n := t.VarChar.GetLength(); n < 0 {
			return nil, errAt(path, "varchar length %d is out of range (0 or more)", n)
		}
		return str(t.VarChar.GetValue()), nil
	case *pb.Expression_Literal_FixedChar:
		return str(t.FixedChar), nil
	case *pb.Expression_Literal_Binary:
		return &sql.TypedLiteral{Type: "X", Value: hex.EncodeToString(t.Binary)}, nil
	case *pb.Expression_Literal_Date:
		return &sql.TypedLiteral{Type: "DATE", Value: time.Unix(int64(t.Date)*86400, 0).UTC().Format("2006-01-02")}, nil
	case *pb.Expression_Literal_PrecisionTimestamp_:
		return tsLit(t.PrecisionTimestamp.GetValue(), t.PrecisionTimestamp.GetPrecision(), "TIMESTAMP", path)
	case *pb.Expression_Literal_PrecisionTimestampTz:
		return tsLit(t.PrecisionTimestampTz.GetValue(), t.PrecisionTimestampTz.GetPrecision(), "TIMESTAMP_LTZ", path)
	case *pb.Expression_Literal_Timestamp:
		return tsLit(t.Timestamp, 6, "TIMESTAMP", path)
	case *pb.Expression_Literal_TimestampTz:
		return tsLit(t.TimestampTz, 6, "TIMESTAMP_LTZ", path)
	case *pb.Expression_Literal_Decimal_:
		d := t.Decimal
		if len(d.GetValue()) != 16 || d.GetPrecision() < 1 || d.GetPrecision() > 38 || d.GetScale() < 0 || d.GetScale() > d.GetPrecision() {
			return nil, errAt(path+".decimal", "a decimal needs 16 bytes and 0 <= scale <= precision <= 38")
		}
		return &sql.Cast{X: str(decimalText(d.GetValue(), int(d.GetScale()))), Type: &sql.TypeName{Name: "DECIMAL", Params: []int{int(d.GetPrecision()), int(d.GetScale())}}}, nil
	case *pb.Expression_Literal_IntervalYearToMonth_:
		months := int64(t.IntervalYearToMonth.GetYears())*12 + int64(t.IntervalYearToMonth.GetMonths())
		return interval(months, "MONTH"), nil
	case *pb.Expression_Literal_IntervalDayToSecond_:
		return daySecond(t.IntervalDayToSecond, path+".interval_day_to_second")
	case *pb.Expression_Literal_IntervalCompound_:
		// flightd's intervals are months or days and time, not both.
		ym, ds := t.IntervalCompound.GetIntervalYearToMonth(), t.IntervalCompound.GetIntervalDayToSecond()
		months := int64(ym.GetYears())*12 + int64(ym.GetMonths())
		switch {
		case months == 0:
			return daySecond(ds, path+".interval_compound.interval_day_to_second")
		case ds.GetDays() == 0 && ds.GetSeconds() == 0 && ds.GetSubseconds() == 0 && ds.GetMicroseconds() == 0:
			return interval(months, "MONTH"), nil
		}
		return nil, errAt(path+".interval_compound", "an interval of both months and days or seconds is not supported")
	case *pb.Expression_Literal_Null:
		tn, err := typeName(t.Null, path+".null")
		if err != nil {
			return nil, err
		}
		return &sql.Cast{X: &sql.Literal{Kind: sql.LitNull, Value: "NULL"}, Type: tn}, nil
	case *pb.Expression_Literal_List_:
		arr := &sql.Collection{Kind: "ARRAY"}
		for i, v := range t.List.GetValues() {
			e, err := c.literal(v, fmt.Sprintf("%s.list.values[%d]", path, i))
			if err != nil {
				return nil, err
			}
			arr.Elems = append(arr.Elems, e)
		}
		return arr, nil
	case *pb.Expression_Literal_Map_:
		m := &sql.Collection{Kind: "MAP"}
		for i, kv := range t.Map.GetKeyValues() {
			k, err := c.literal(kv.GetKey(), fmt.Sprintf("%s.map.key_values[%d].key", path, i))
			if err != nil {
				return nil, err
			}
			v, err := c.literal(kv.GetValue(), fmt.Sprintf("%s.map.key_values[%d].value", path, i))
			if err != nil {
				return nil, err
			}
			m.Elems = append(m.Elems, k, v)
		}
		return m, nil
	}
	return nil, errAt(path, "literal %s is not supported", strings.TrimPrefix(fmt.Sprintf("%T", l.GetLiteralType()), "*substraitpb.Expression_Literal_"))
}

func interval(n int64, unit string) sql.Expr {
	neg := n < 0
	if neg {
		n = -n
	}
	return &sql.IntervalLiteral{Negative: neg, Value: strconv.FormatInt(n, 10), Unit: unit}
}

func floatLit(f float64, typ string, bits int) sql.Expr {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return typed(str(strconv.FormatFloat(f, 'g', -1, bits)), typ)
	}
	return typed(&sql.Literal{Kind: sql.LitNumber, Value: strconv.FormatFloat(f, 'e', -1, bits)}, typ)
}

func tsLit(v int64, prec int32, typ, path string) (sql.Expr, error) {
	if prec < 0 || prec > 9 {
		return nil, errAt(path, "timestamp precision %d is out of range", prec)
	}
	scale := int64(math.Pow10(int(prec)))
	sec, frac := v/scale, v%scale
	if frac < 0 {
		sec, frac = sec-1, frac+scale
	}
	text := time.Unix(sec, frac*int64(math.Pow10(9-int(prec)))).UTC().Format("2006-01-02 15:04:05.999999999")
	lit := sql.Expr(&sql.TypedLiteral{Type: "TIMESTAMP", Value: text})
	return &sql.Cast{X: lit, Type: &sql.TypeName{Name: typ, Params: []int{int(prec)}}}, nil
}

// decimalText prints a 16-byte little-endian two's-complement integer
// with scale digits after the point.
func decimalText(le []byte, scale int) string {
	be := make([]byte, 16)
	for i := range le {
		be[15-i] = le[i]
	}
	v := new(big.Int).SetBytes(be)
	if be[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	s := v.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if scale > 0 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// typeName is the SQL type of a Substrait type.
func typeName(t *pb.Type, path string) (*sql.TypeName, error) { return typeNameIn(t, path, 0) }

// typeNameIn is typeName of a type inside maps MAP types: nested past
// plan.MaxMapNesting it is refused here, at its place in the plan, as
// DDL, CAST and ingest refuse it.
func typeNameIn(t *pb.Type, path string, maps int) (*sql.TypeName, error) {
	name := func(n string, params ...int) (*sql.TypeName, error) {
		return &sql.TypeName{Name: n, Params: params}, nil
	}
	// Lengths and precisions out of range are refused, as SQL refuses
	// them, rather than clamped: the plan means a type flightd does not
	// have.
	length := func(n int32, typ string) error {
		if n < 0 {
			return errAt(path, "%s length %d is out of range (0 or more)", typ, n)
		}
		return nil
	}
	precision := func(sqlName string, p int32, typ string) (*sql.TypeName, error) {
		if p < 0 || p > 9 {
			return nil, errAt(path, "%s precision %d is out of range (0 to 9: seconds to nanoseconds)", typ, p)
		}
		return name(sqlName, int(p))
	}
	switch k := t.GetKind().(type) {
	case *pb.Type_Bool:
		return name("BOOLEAN")
	case *pb.Type_I8_:
		return name("TINYINT")
	case *pb.Type_I16_:
		return name("SMALLINT")
	case *pb.Type_I32_:
		return name("INT")
	case *pb.Type_I64_:
		return name("BIGINT")
	case *pb.Type_Fp32:
		return name("FLOAT")
	case *pb.Type_Fp64:
		return name("DOUBLE")
	case *pb.Type_String_:
		return name("STRING")
	case *pb.Type_Varchar:
		if err := length(k.Varchar.GetLength(), "varchar"); err != nil {
			return nil, err
		}
		return name("STRING")
	case *pb.Type_FixedChar_:
		if err := length(k.FixedChar.GetLength(), "fixed_char"); err != nil {
			return nil, err
		}
		return name("STRING")
	case *pb.Type_Binary_:
		return name("BYTES")
	case *pb.Type_FixedBinary_:
		if err := length(k.FixedBinary.GetLength(), "fixed_binary"); err != nil {
			return nil, err
		}
		return name("BYTES")
	case *pb.Type_Date_:
		return name("DATE")
	case *pb.Type_Time_:
		return name("TIME", 6)
	case *pb.Type_PrecisionTime_:
		return precision("TIME", k.PrecisionTime.GetPrecision(), "precision_time")
	case *pb.Type_Timestamp_:
		return name("TIMESTAMP", 6)
	case *pb.Type_TimestampTz:
		return name("TIMESTAMP_LTZ", 6)
	case *pb.Type_PrecisionTimestamp_:
		return precision("TIMESTAMP", k.PrecisionTimestamp.GetPrecision(), "precision_timestamp")
	case *pb.Type_PrecisionTimestampTz:
		return precision("TIMESTAMP_LTZ", k.PrecisionTimestampTz.GetPrecision(), "precision_timestamp_tz")
	case *pb.Type_Decimal_:
		p, s := int(k.Decimal.GetPrecision()), int(k.Decimal.GetScale())
		if p < 1 || p > 38 || s < 0 || s > p {
			return nil, errAt(path, "decimal(%d, %d) is out of range", p, s)
		}
		return name("DECIMAL", p, s)
	case *pb.Type_List_:
		e, err := typeNameIn(k.List.GetType(), path+".list.type", maps)
		if err != nil {
			return nil, err
		}
		return &sql.TypeName{Name: "ARRAY", Elems: []*sql.TypeName{e}}, nil
	case *pb.Type_Map_:
		if maps++; maps > plan.MaxMapNesting {
			return nil, errAt(path, "MAP types nested more than %d deep", plan.MaxMapNesting)
		}
		kt, err := typeNameIn(k.Map.GetKey(), path+".map.key", maps)
		if err != nil {
			return nil, err
		}
		vt, err := typeNameIn(k.Map.GetValue(), path+".map.value", maps)
		if err != nil {
			return nil, err
		}
		return &sql.TypeName{Name: "MAP", Elems: []*sql.TypeName{kt, vt}}, nil
	case *pb.Type_IntervalYear_, *pb.Type_IntervalDay_:
		return name("INTERVAL")
	case nil:
		return nil, errAt(path, "missing type")
	}
	return nil, errAt(path, "type %s is not supported", strings.TrimPrefix(fmt.Sprintf("%T", t.GetKind()), "*substraitpb.Type_"))
}

// plainName: function names become SQL function calls, so only letters,
// digits and underscores (not first a digit) are taken.
func plainName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func isNull(e sql.Expr) bool {
	if c, ok := e.(*sql.Cast); ok {
		e = c.X
	}
	l, ok := e.(*sql.Literal)
	return ok && l.Kind == sql.LitNull
}

// daySecond is a day-to-second interval literal.
func daySecond(iv *pb.Expression_Literal_IntervalDayToSecond, path string) (sql.Expr, error) {
	sub, prec := iv.GetSubseconds(), iv.GetPrecision()
	if iv.GetMicroseconds() != 0 {
		sub, prec = int64(iv.GetMicroseconds()), 6
	}
	if prec < 0 || prec > 9 || iv.GetDays() > 1e6 || iv.GetDays() < -1e6 || sub > 1e12 || sub < -1e12 {
		return nil, errAt(path, "precision %d, %d days or %d subseconds out of range", prec, iv.GetDays(), sub)
	}
	nanos := (int64(iv.GetDays())*86400+int64(iv.GetSeconds()))*1e9 + sub*int64(math.Pow10(9-int(prec)))
	if nanos%(86400*1e9) == 0 {
		return interval(nanos/(86400*1e9), "DAY"), nil
	}
	neg := nanos < 0
	if neg {
		nanos = -nanos
	}
	secs := strconv.FormatInt(nanos/1e9, 10)
	if frac := nanos % 1e9; frac != 0 {
		secs += strings.TrimRight(fmt.Sprintf(".%09d", frac), "0")
	}
	return &sql.IntervalLiteral{Negative: neg, Value: secs, Unit: "SECOND"}, nil
}
