package substrait

import (
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	pb "github.com/substrait-io/substrait-protobuf/go/substraitpb"
	ext "github.com/substrait-io/substrait-protobuf/go/substraitpb/extensions"
	"google.golang.org/protobuf/proto"

	"github.com/flightd/flightd/plan"
)

// ErrNoForm marks a logical plan the producer cannot express in Substrait.
var ErrNoForm = errors.New("no Substrait form")

// standard maps flightd function names to a standard extension and the
// name it gives the function; the others are declared under flightdURN
// with flightd's name.
var standard = map[string][2]string{
	"add": {"functions_arithmetic", "add"}, "subtract": {"functions_arithmetic", "subtract"},
	"multiply": {"functions_arithmetic", "multiply"}, "divide": {"functions_arithmetic", "divide"},
	"modulo": {"functions_arithmetic", "modulus"}, "negate": {"functions_arithmetic", "negate"},
	"abs": {"functions_arithmetic", "abs"}, "sqrt": {"functions_arithmetic", "sqrt"},
	"exp": {"functions_arithmetic", "exp"}, "power": {"functions_arithmetic", "power"},
	"sum": {"functions_arithmetic", "sum"}, "avg": {"functions_arithmetic", "avg"},
	"min": {"functions_arithmetic", "min"}, "max": {"functions_arithmetic", "max"},
	"equal": {"functions_comparison", "equal"}, "not_equal": {"functions_comparison", "not_equal"},
	"less": {"functions_comparison", "lt"}, "less_equal": {"functions_comparison", "lte"},
	"greater": {"functions_comparison", "gt"}, "greater_equal": {"functions_comparison", "gte"},
	"is_null": {"functions_comparison", "is_null"}, "is_not_null": {"functions_comparison", "is_not_null"},
	"coalesce": {"functions_comparison", "coalesce"},
	"and":      {"functions_boolean", "and"}, "or": {"functions_boolean", "or"}, "not": {"functions_boolean", "not"},
	"concat": {"functions_string", "concat"}, "lower": {"functions_string", "lower"}, "upper": {"functions_string", "upper"},
	"substring": {"functions_string", "substring"}, "char_length": {"functions_string", "char_length"},
	"extract": {"functions_datetime", "extract"},
	"count":   {"functions_aggregate_generic", "count"}, "count_star": {"functions_aggregate_generic", "count"},
}

// unitFirst are the functions whose first argument is a unit (YEAR, ...).
var unitFirst = map[string]bool{"extract": true, "timestampdiff": true, "timestampadd": true}

type producer struct {
	urns    map[string]uint32
	funcs   map[string]uint32 // urn + "#" + name
	plan    *pb.Plan
	ctes    map[*plan.SharedCTE]int32
	nParams int
}

// Produce writes a logical plan as a serialized Substrait plan whose root
// columns are named names.
func Produce(root plan.Node, names []string) ([]byte, error) {
	p := &producer{urns: map[string]uint32{}, funcs: map[string]uint32{}, ctes: map[*plan.SharedCTE]int32{},
		plan: &pb.Plan{Version: &pb.Version{MinorNumber: 85, Producer: "flightd"}}}
	r, _, err := p.rel(root)
	if err != nil {
		return nil, err
	}
	p.plan.Relations = append(p.plan.Relations, &pb.PlanRel{RelType: &pb.PlanRel_Root{Root: &pb.RelRoot{Input: r, Names: names}}})
	return proto.Marshal(p.plan)
}

func noForm(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNoForm, fmt.Sprintf(format, args...))
}

func (p *producer) fn(name string) uint32 {
	urn, sname := flightdURN, name
	if s, ok := standard[name]; ok {
		urn, sname = "extension:io.substrait:"+s[0], s[1]
	}
	key := urn + "#" + sname
	if a, ok := p.funcs[key]; ok {
		return a
	}
	u, ok := p.urns[urn]
	if !ok {
		u = uint32(len(p.urns) + 1)
		p.urns[urn] = u
		p.plan.ExtensionUrns = append(p.plan.ExtensionUrns, &ext.SimpleExtensionURN{ExtensionUrnAnchor: u, Urn: urn})
	}
	a := uint32(len(p.funcs) + 1)
	p.funcs[key] = a
	p.plan.Extensions = append(p.plan.Extensions, &ext.SimpleExtensionDeclaration{MappingType: &ext.SimpleExtensionDeclaration_ExtensionFunction_{
		ExtensionFunction: &ext.SimpleExtensionDeclaration_ExtensionFunction{ExtensionUrnReference: u, FunctionAnchor: a, Name: sname}}})
	return a
}

func ids(cols []plan.Column) []plan.ColumnID {
	out := make([]plan.ColumnID, len(cols))
	for i, c := range cols {
		out[i] = c.ID
	}
	return out
}

func emit(n int, from int) *pb.RelCommon {
	m := make([]int32, n)
	for i := range m {
		m[i] = int32(from + i)
	}
	return &pb.RelCommon{EmitKind: &pb.RelCommon_Emit_{Emit: &pb.RelCommon_Emit{OutputMapping: m}}}
}

// rel writes n; the IDs are n's output columns by position.
func (p *producer) rel(n plan.Node) (*pb.Rel, []plan.ColumnID, error) {
	out := ids(n.Columns())
	switch x := n.(type) {
	case *plan.ScanNode:
		if x.Stream != nil || x.Tag != "" || x.Snapshot != 0 {
			return nil, nil, noForm("a read of a change stream or of a chosen snapshot (time travel, a transaction's)")
		}
		if x.Read != plan.ReadRows {
			return nil, nil, noForm("a read of t$ro or t$audit_log")
		}
		// base_schema is the table's whole schema, as Substrait means it
		// (a consumer checks it against the table); the scan's columns are
		// its projection, and the filter refers to the whole schema.
		id := x.Table.Ident()
		fields := x.Table.Schema().Fields()
		schema := &pb.NamedStruct{Struct: &pb.Type_Struct{Nullability: pb.Type_NULLABILITY_REQUIRED}}
		pos := make(map[string]int, len(fields))
		// A struct column's fields are named after it, depth first.
		var named func(dt arrow.DataType) (*pb.Type, error)
		named = func(dt arrow.DataType) (*pb.Type, error) {
			st, ok := dt.(*arrow.StructType)
			if !ok {
				return typeOf(dt)
			}
			s := &pb.Type_Struct{Nullability: nullable()}
			for _, f := range st.Fields() {
				schema.Names = append(schema.Names, f.Name)
				t, err := named(f.Type)
				if err != nil {
					return nil, err
				}
				s.Types = append(s.Types, t)
			}
			return &pb.Type{Kind: &pb.Type_Struct_{Struct: s}}, nil
		}
		for i, f := range fields {
			schema.Names = append(schema.Names, f.Name)
			t, err := named(f.Type)
			if err != nil {
				return nil, nil, err
			}
			schema.Struct.Types = append(schema.Struct.Types, t)
			pos[f.Name] = i
		}
		base := make([]plan.ColumnID, len(fields))
		for i := range base {
			base[i] = -1 // no column of the plan
		}
		proj := &pb.Expression_MaskExpression{Select: &pb.Expression_MaskExpression_StructSelect{}, MaintainSingularStruct: true}
		for i, n := range x.Names {
			j, ok := pos[n]
			if !ok || i >= len(x.Cols) {
				return nil, nil, noForm("a read of column %q, which is not one of table %s's", n, id)
			}
			base[j] = x.Cols[i].ID
			proj.Select.StructItems = append(proj.Select.StructItems, &pb.Expression_MaskExpression_StructItem{Field: int32(j)})
		}
		read := &pb.ReadRel{BaseSchema: schema, Projection: proj, ReadType: &pb.ReadRel_NamedTable_{NamedTable: &pb.ReadRel_NamedTable{Names: []string{id.Database, id.Table}}}}
		if x.Filter != nil {
			f, err := p.expr(x.Filter, base)
			if err != nil {
				return nil, nil, err
			}
			read.Filter = f
		}
		return &pb.Rel{RelType: &pb.Rel_Read{Read: read}}, out, nil
	case *plan.ValuesNode:
		vt := &pb.ReadRel_VirtualTable{}
		for _, row := range x.Values {
			s := &pb.Expression_Nested_Struct{}
			for _, e := range row {
				pe, err := p.expr(e, nil)
				if err != nil {
					return nil, nil, err
				}
				s.Fields = append(s.Fields, pe)
			}
			vt.Expressions = append(vt.Expressions, s)
		}
		schema := &pb.NamedStruct{Struct: &pb.Type_Struct{Nullability: pb.Type_NULLABILITY_REQUIRED}}
		for _, c := range x.Cols {
			t, err := typeOf(c.Type)
			if err != nil {
				return nil, nil, err
			}
			schema.Names = append(schema.Names, c.Name)
			schema.Struct.Types = append(schema.Struct.Types, t)
		}
		return &pb.Rel{RelType: &pb.Rel_Read{Read: &pb.ReadRel{BaseSchema: schema, ReadType: &pb.ReadRel_VirtualTable_{VirtualTable: vt}}}}, out, nil
	case *plan.FilterNode:
		in, cols, err := p.rel(x.Input)
		if err != nil {
			return nil, nil, err
		}
		cond, err := p.expr(x.Pred, cols)
		if err != nil {
			return nil, nil, err
		}
		return &pb.Rel{RelType: &pb.Rel_Filter{Filter: &pb.FilterRel{Input: in, Condition: cond}}}, cols, nil
	case *plan.ProjectNode:
		in, cols, err := p.rel(x.Input)
		if err != nil {
			return nil, nil, err
		}
		pr := &pb.ProjectRel{Input: in, Common: emit(len(x.Exprs), len(cols))}
		for _, e := range x.Exprs {
			pe, err := p.expr(e, cols)
			if err != nil {
				return nil, nil, err
			}
			pr.Expressions = append(pr.Expressions, pe)
		}
		return &pb.Rel{RelType: &pb.Rel_Project{Project: pr}}, out, nil
	case *plan.JoinNode:
		return p.join(x, out)
	case *plan.AggNode:
		return p.aggregate(x, out)
	case *plan.DistinctNode:
		in, cols, err := p.rel(x.Input)
		if err != nil {
			return nil, nil, err
		}
		agg := &pb.AggregateRel{Input: in, Groupings: []*pb.AggregateRel_Grouping{{}}}
		for i := range cols {
			agg.GroupingExpressions = append(agg.GroupingExpressions, field(i))
			agg.Groupings[0].ExpressionReferences = append(agg.Groupings[0].ExpressionReferences, uint32(i))
		}
		return &pb.Rel{RelType: &pb.Rel_Aggregate{Aggregate: agg}}, cols, nil
	case *plan.SortNode:
		in, cols, err := p.rel(x.Input)
		if err != nil {
			return nil, nil, err
		}
		sorts, err := p.sorts(x.Keys, cols)
		if err != nil {
			return nil, nil, err
		}
		return &pb.Rel{RelType: &pb.Rel_Sort{Sort: &pb.SortRel{Input: in, Sorts: sorts}}}, cols, nil
	case *plan.LimitNode:
		in, cols, err := p.rel(x.Input)
		if err != nil {
			return nil, nil, err
		}
		f := &pb.FetchRel{Input: in}
		if x.Count != nil {
			e, err := p.expr(x.Count, nil)
			if err != nil {
				return nil, nil, err
			}
			f.CountMode = &pb.FetchRel_CountExpr{CountExpr: e}
		}
		if x.Offset != nil {
			e, err := p.expr(x.Offset, nil)
			if err != nil {
				return nil, nil, err
			}
			f.OffsetMode = &pb.FetchRel_OffsetExpr{OffsetExpr: e}
		}
		return &pb.Rel{RelType: &pb.Rel_Fetch{Fetch: f}}, cols, nil
	case *plan.SetOpNode:
		l, _, err := p.rel(x.Left)
		if err != nil {
			return nil, nil, err
		}
		r, _, err := p.rel(x.Right)
		if err != nil {
			return nil, nil, err
		}
		op := map[[2]any]pb.SetRel_SetOp{
			{plan.Union, true}: pb.SetRel_SET_OP_UNION_ALL, {plan.Union, false}: pb.SetRel_SET_OP_UNION_DISTINCT,
			{plan.Intersect, true}: pb.SetRel_SET_OP_INTERSECTION_MULTISET_ALL, {plan.Intersect, false}: pb.SetRel_SET_OP_INTERSECTION_MULTISET,
			{plan.Except, true}: pb.SetRel_SET_OP_MINUS_PRIMARY_ALL, {plan.Except, false}: pb.SetRel_SET_OP_MINUS_PRIMARY,
		}[[2]any{x.Kind, x.All}]
		return &pb.Rel{RelType: &pb.Rel_Set{Set: &pb.SetRel{Inputs: []*pb.Rel{l, r}, Op: op}}}, out, nil
	case *plan.WindowNode:
		return p.window(x, out)
	case *plan.CTEScanNode:
		ord, ok := p.ctes[x.Shared]
		if !ok {
			body, _, err := p.rel(x.Shared.Root)
			if err != nil {
				return nil, nil, err
			}
			ord = int32(len(p.plan.Relations))
			p.plan.Relations = append(p.plan.Relations, &pb.PlanRel{RelType: &pb.PlanRel_Rel{Rel: body}})
			p.ctes[x.Shared] = ord
		}
		return &pb.Rel{RelType: &pb.Rel_Reference{Reference: &pb.ReferenceRel{SubtreeOrdinal: ord}}}, out, nil
	}
	return nil, nil, noForm("logical node %T", n)
}

func (p *producer) join(x *plan.JoinNode, out []plan.ColumnID) (*pb.Rel, []plan.ColumnID, error) {
	r := x.Right
	single := false
	if m, ok := r.(*plan.Max1RowNode); ok && m.PerKeyCount == nil && (x.Kind == plan.InnerJoin || x.Kind == plan.LeftJoin && x.Cond == nil) {
		// A scalar subquery: one row of NULLs when the subquery has none,
		// an error when it has several, which is what a single join with
		// a true condition does; an inner join's condition filters after.
		r, single = m.Input, true
	}
	left, lcols, err := p.rel(x.Left)
	if err != nil {
		return nil, nil, err
	}
	right, rcols, err := p.rel(r)
	if err != nil {
		return nil, nil, err
	}
	both := append(append([]plan.ColumnID(nil), lcols...), rcols...)
	if x.Kind == plan.AntiNullAwareJoin {
		return p.notIn(x, left, right, lcols, rcols)
	}
	if x.Cond == nil && x.Kind == plan.InnerJoin && !single {
		return &pb.Rel{RelType: &pb.Rel_Cross{Cross: &pb.CrossRel{Left: left, Right: right}}}, out, nil
	}
	var kind pb.JoinRel_JoinType
	switch x.Kind {
	case plan.InnerJoin:
		kind = pb.JoinRel_JOIN_TYPE_INNER
	case plan.LeftJoin:
		kind = pb.JoinRel_JOIN_TYPE_LEFT
	case plan.RightJoin:
		kind = pb.JoinRel_JOIN_TYPE_RIGHT
	case plan.FullJoin:
		kind = pb.JoinRel_JOIN_TYPE_OUTER
	case plan.SemiJoin:
		kind = pb.JoinRel_JOIN_TYPE_LEFT_SEMI
	case plan.AntiJoin:
		kind = pb.JoinRel_JOIN_TYPE_LEFT_ANTI
	default:
		return nil, nil, noForm("%s join", x.Kind)
	}
	cond := lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Boolean{Boolean: true}})
	var filter *pb.Expression
	if x.Cond != nil {
		if filter, err = p.expr(x.Cond, both); err != nil {
			return nil, nil, err
		}
	}
	if !single {
		if filter != nil {
			cond = filter
		}
		return &pb.Rel{RelType: &pb.Rel_Join{Join: &pb.JoinRel{Left: left, Right: right, Expression: cond, Type: kind}}}, out, nil
	}
	join := &pb.Rel{RelType: &pb.Rel_Join{Join: &pb.JoinRel{Left: left, Right: right, Expression: cond, Type: pb.JoinRel_JOIN_TYPE_LEFT_SINGLE}}}
	if filter == nil {
		return join, out, nil
	}
	return &pb.Rel{RelType: &pb.Rel_Filter{Filter: &pb.FilterRel{Input: join, Condition: filter}}}, out, nil
}

func (p *producer) aggregate(x *plan.AggNode, out []plan.ColumnID) (*pb.Rel, []plan.ColumnID, error) {
	in, cols, err := p.rel(x.Input)
	if err != nil {
		return nil, nil, err
	}
	agg := &pb.AggregateRel{Input: in}
	for _, g := range x.Groups {
		e, err := p.expr(g, cols)
		if err != nil {
			return nil, nil, err
		}
		agg.GroupingExpressions = append(agg.GroupingExpressions, e)
	}
	sets := x.Sets
	if sets == nil && len(x.Groups) > 0 {
		all := make([]int, len(x.Groups))
		for i := range all {
			all[i] = i
		}
		sets = [][]int{all}
	}
	for _, s := range sets {
		g := &pb.AggregateRel_Grouping{ExpressionReferences: []uint32{}}
		for _, k := range s {
			g.ExpressionReferences = append(g.ExpressionReferences, uint32(k))
		}
		agg.Groupings = append(agg.Groupings, g)
	}
	for _, a := range x.Aggs {
		m := &pb.AggregateRel_Measure{Measure: &pb.AggregateFunction{FunctionReference: p.fn(a.Fn),
			Phase: pb.AggregationPhase_AGGREGATION_PHASE_INITIAL_TO_RESULT, Invocation: pb.AggregateFunction_AGGREGATION_INVOCATION_ALL}}
		if a.Distinct {
			m.Measure.Invocation = pb.AggregateFunction_AGGREGATION_INVOCATION_DISTINCT
		}
		if m.Measure.OutputType, err = typeOf(a.Col.Type); err != nil {
			return nil, nil, err
		}
		for _, arg := range a.Args {
			e, err := p.expr(arg, cols)
			if err != nil {
				return nil, nil, err
			}
			m.Measure.Arguments = append(m.Measure.Arguments, &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Value{Value: e}})
		}
		if a.Filter != nil {
			if m.Filter, err = p.expr(a.Filter, cols); err != nil {
				return nil, nil, err
			}
		}
		agg.Measures = append(agg.Measures, m)
	}
	rel := &pb.Rel{RelType: &pb.Rel_Aggregate{Aggregate: agg}}
	n := len(x.Groups) + len(x.Aggs)
	if len(sets) <= 1 {
		if x.GroupingID != nil {
			return nil, nil, noForm("a grouping id over one grouping set")
		}
		return rel, out, nil
	}
	// Substrait appends the grouping set's index; flightd's grouping id has
	// bit i set when group i is absent from the set.
	pr := &pb.ProjectRel{Input: rel, Common: emit(n, 0)}
	if x.GroupingID != nil {
		sw := &pb.Expression_SwitchExpression{Match: field(n)}
		for i, s := range sets {
			mask := int64(0)
			for k := range x.Groups {
				present := false
				for _, j := range s {
					present = present || j == k
				}
				if !present {
					mask |= 1 << k
				}
			}
			sw.Ifs = append(sw.Ifs, &pb.Expression_SwitchExpression_IfValue{
				If:   &pb.Expression_Literal{LiteralType: &pb.Expression_Literal_I32{I32: int32(i)}},
				Then: lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_I64{I64: mask}})})
		}
		pr.Expressions = []*pb.Expression{{RexType: &pb.Expression_SwitchExpression_{SwitchExpression: sw}}}
		pr.Common = emit(n, 0)
		pr.Common.GetEmit().OutputMapping = append(pr.Common.GetEmit().OutputMapping, int32(n+1))
	}
	return &pb.Rel{RelType: &pb.Rel_Project{Project: pr}}, out, nil
}

func lit(l *pb.Expression_Literal) *pb.Expression {
	return &pb.Expression{RexType: &pb.Expression_Literal_{Literal: l}}
}

func field(i int) *pb.Expression {
	return &pb.Expression{RexType: &pb.Expression_Selection{Selection: &pb.Expression_FieldReference{
		ReferenceType: &pb.Expression_FieldReference_DirectReference{DirectReference: &pb.Expression_ReferenceSegment{
			ReferenceType: &pb.Expression_ReferenceSegment_StructField_{StructField: &pb.Expression_ReferenceSegment_StructField{Field: int32(i)}}}},
		RootType: &pb.Expression_FieldReference_RootReference_{RootReference: &pb.Expression_FieldReference_RootReference{}}}}}
}

func (p *producer) sorts(keys []plan.SortKey, cols []plan.ColumnID) ([]*pb.SortField, error) {
	var out []*pb.SortField
	for _, k := range keys {
		e, err := p.expr(k.Expr, cols)
		if err != nil {
			return nil, err
		}
		dir := map[[2]bool]pb.SortField_SortDirection{
			{false, true}: pb.SortField_SORT_DIRECTION_ASC_NULLS_FIRST, {false, false}: pb.SortField_SORT_DIRECTION_ASC_NULLS_LAST,
			{true, true}: pb.SortField_SORT_DIRECTION_DESC_NULLS_FIRST, {true, false}: pb.SortField_SORT_DIRECTION_DESC_NULLS_LAST,
		}[[2]bool{k.Desc, k.NullsFirst}]
		out = append(out, &pb.SortField{Expr: e, SortKind: &pb.SortField_Direction{Direction: dir}})
	}
	return out, nil
}

func (p *producer) window(x *plan.WindowNode, out []plan.ColumnID) (*pb.Rel, []plan.ColumnID, error) {
	in, cols, err := p.rel(x.Input)
	if err != nil {
		return nil, nil, err
	}
	w := &pb.ConsistentPartitionWindowRel{Input: in}
	for _, e := range x.PartitionBy {
		pe, err := p.expr(e, cols)
		if err != nil {
			return nil, nil, err
		}
		w.PartitionExpressions = append(w.PartitionExpressions, pe)
	}
	if w.Sorts, err = p.sorts(x.OrderBy, cols); err != nil {
		return nil, nil, err
	}
	for _, f := range x.Funcs {
		wf := &pb.ConsistentPartitionWindowRel_WindowRelFunction{FunctionReference: p.fn(f.Fn),
			Phase: pb.AggregationPhase_AGGREGATION_PHASE_INITIAL_TO_RESULT, Invocation: pb.AggregateFunction_AGGREGATION_INVOCATION_ALL}
		if wf.OutputType, err = typeOf(f.Col.Type); err != nil {
			return nil, nil, err
		}
		for _, a := range f.Args {
			e, err := p.expr(a, cols)
			if err != nil {
				return nil, nil, err
			}
			wf.Arguments = append(wf.Arguments, &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Value{Value: e}})
		}
		if fr := f.Frame; fr != nil {
			if !fr.Rows && hasOffset(int(fr.Start.Kind), int(fr.End.Kind)) && !arrow.IsInteger(x.OrderBy[0].Expr.Type().ID()) {
				// The consumer writes SQL, whose offset over a DATE or
				// TIMESTAMP key is an INTERVAL it cannot type.
				return nil, nil, noForm("a RANGE frame offset over a %s key", plan.SQLTypeName(x.OrderBy[0].Expr.Type()))
			}
			wf.BoundsType = pb.Expression_WindowFunction_BOUNDS_TYPE_RANGE
			if fr.Rows {
				wf.BoundsType = pb.Expression_WindowFunction_BOUNDS_TYPE_ROWS
			}
			wf.LowerBound, wf.UpperBound = bound(int(fr.Start.Kind), fr.Start.Offset), bound(int(fr.End.Kind), fr.End.Offset)
		}
		w.WindowFunctions = append(w.WindowFunctions, wf)
	}
	return &pb.Rel{RelType: &pb.Rel_Window{Window: w}}, out, nil
}

// hasOffset reports whether a frame bound of one of kinds (exec's, as
// for bound) has an offset: preceding or following.
func hasOffset(kinds ...int) bool {
	for _, k := range kinds {
		if k == 1 || k == 3 {
			return true
		}
	}
	return false
}

// bound writes a frame bound; kinds are exec.FrameBoundKind's, in order:
// unbounded preceding, preceding, current row, following, unbounded
// following.
func bound(kind int, offset int64) *pb.Expression_WindowFunction_Bound {
	b := &pb.Expression_WindowFunction_Bound{}
	switch kind {
	case 0, 4:
		b.Kind = &pb.Expression_WindowFunction_Bound_Unbounded_{Unbounded: &pb.Expression_WindowFunction_Bound_Unbounded{}}
	case 1:
		b.Kind = &pb.Expression_WindowFunction_Bound_Preceding_{Preceding: &pb.Expression_WindowFunction_Bound_Preceding{Offset: offset}}
	case 2:
		b.Kind = &pb.Expression_WindowFunction_Bound_CurrentRow_{CurrentRow: &pb.Expression_WindowFunction_Bound_CurrentRow{}}
	case 3:
		b.Kind = &pb.Expression_WindowFunction_Bound_Following_{Following: &pb.Expression_WindowFunction_Bound_Following{Offset: offset}}
	}
	return b
}

func (p *producer) expr(e plan.Expr, cols []plan.ColumnID) (*pb.Expression, error) {
	switch x := e.(type) {
	case *plan.ColRef:
		for i, id := range cols {
			if id == x.ID {
				return field(i), nil
			}
		}
		return nil, noForm("column %s (#%d) is not an input column here (a correlated reference)", x.Name, x.ID)
	case *plan.Const:
		l, err := literal(x.Value)
		if err != nil {
			return nil, err
		}
		return lit(l), nil
	case *plan.ParamRef:
		t, err := typeOf(x.Type())
		if err != nil {
			return nil, err
		}
		return &pb.Expression{RexType: &pb.Expression_DynamicParameter{DynamicParameter: &pb.DynamicParameter{Type: t, ParameterReference: uint32(x.Index - 1)}}}, nil
	case *plan.Call:
		if strings.HasPrefix(x.Fn, "$") {
			return nil, noForm("internal function %s", x.Fn) // the binder's own (window bounds finer than a second)
		}
		if x.Fn == "field" {
			// The consumer has no form of a struct field access by
			// position (SQL's field() takes a constant index, which a
			// plan's literal does not bind as).
			return nil, noForm("a struct field access")
		}
		t, err := typeOf(x.Typ)
		if err != nil {
			return nil, err
		}
		f := &pb.Expression_ScalarFunction{FunctionReference: p.fn(x.Fn), OutputType: t}
		args := x.Args
		if unitFirst[x.Fn] && len(args) > 0 {
			// The unit is an enum argument in Substrait.
			if c, ok := args[0].(*plan.Const); ok && c.Value.IsValid() && c.Value.DataType().ID() == arrow.STRING {
				f.Arguments = append(f.Arguments, &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Enum{Enum: strings.ToUpper(c.Value.String())}})
				args = args[1:]
			}
		}
		for _, a := range args {
			pe, err := p.expr(a, cols)
			if err != nil {
				return nil, err
			}
			f.Arguments = append(f.Arguments, &pb.FunctionArgument{ArgType: &pb.FunctionArgument_Value{Value: pe}})
		}
		return &pb.Expression{RexType: &pb.Expression_ScalarFunction_{ScalarFunction: f}}, nil
	case *plan.Cast:
		in, err := p.expr(x.X, cols)
		if err != nil {
			return nil, err
		}
		t, err := typeOf(x.Typ)
		if err != nil {
			return nil, err
		}
		return &pb.Expression{RexType: &pb.Expression_Cast_{Cast: &pb.Expression_Cast{Input: in, Type: t, FailureBehavior: pb.Expression_Cast_FAILURE_BEHAVIOR_THROW_EXCEPTION}}}, nil
	case *plan.Case:
		it := &pb.Expression_IfThen{}
		for _, w := range x.Whens {
			c, err := p.expr(w.Cond, cols)
			if err != nil {
				return nil, err
			}
			t, err := p.expr(w.Then, cols)
			if err != nil {
				return nil, err
			}
			it.Ifs = append(it.Ifs, &pb.Expression_IfThen_IfClause{If: c, Then: t})
		}
		if x.Else != nil {
			e, err := p.expr(x.Else, cols)
			if err != nil {
				return nil, err
			}
			it.Else = e
		} else {
			t, err := typeOf(x.Typ)
			if err != nil {
				return nil, err
			}
			it.Else = lit(&pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Null{Null: t}})
		}
		return &pb.Expression{RexType: &pb.Expression_IfThen_{IfThen: it}}, nil
	case *plan.In:
		v, err := p.expr(x.X, cols)
		if err != nil {
			return nil, err
		}
		sl := &pb.Expression_SingularOrList{Value: v}
		for _, o := range x.List {
			pe, err := p.expr(o, cols)
			if err != nil {
				return nil, err
			}
			sl.Options = append(sl.Options, pe)
		}
		return &pb.Expression{RexType: &pb.Expression_SingularOrList_{SingularOrList: sl}}, nil
	}
	return nil, noForm("expression %T (%s)", e, e)
}

func nullable() pb.Type_Nullability { return pb.Type_NULLABILITY_NULLABLE }

// typeOf is the Substrait type of an Arrow type (nullable).
func typeOf(dt arrow.DataType) (*pb.Type, error) {
	n := nullable()
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return &pb.Type{Kind: &pb.Type_Bool{Bool: &pb.Type_Boolean{Nullability: n}}}, nil
	case *arrow.Int8Type:
		return &pb.Type{Kind: &pb.Type_I8_{I8: &pb.Type_I8{Nullability: n}}}, nil
	case *arrow.Int16Type:
		return &pb.Type{Kind: &pb.Type_I16_{I16: &pb.Type_I16{Nullability: n}}}, nil
	case *arrow.Int32Type:
		return &pb.Type{Kind: &pb.Type_I32_{I32: &pb.Type_I32{Nullability: n}}}, nil
	case *arrow.Int64Type:
		return &pb.Type{Kind: &pb.Type_I64_{I64: &pb.Type_I64{Nullability: n}}}, nil
	case *arrow.Float32Type:
		return &pb.Type{Kind: &pb.Type_Fp32{Fp32: &pb.Type_FP32{Nullability: n}}}, nil
	case *arrow.Float64Type:
		return &pb.Type{Kind: &pb.Type_Fp64{Fp64: &pb.Type_FP64{Nullability: n}}}, nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return &pb.Type{Kind: &pb.Type_String_{String_: &pb.Type_String{Nullability: n}}}, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return &pb.Type{Kind: &pb.Type_Binary_{Binary: &pb.Type_Binary{Nullability: n}}}, nil
	case *arrow.Date32Type:
		return &pb.Type{Kind: &pb.Type_Date_{Date: &pb.Type_Date{Nullability: n}}}, nil
	case *arrow.Decimal128Type:
		return &pb.Type{Kind: &pb.Type_Decimal_{Decimal: &pb.Type_Decimal{Precision: t.Precision, Scale: t.Scale, Nullability: n}}}, nil
	case *arrow.TimestampType:
		prec := unitPrecision(t.Unit)
		if t.TimeZone != "" {
			return &pb.Type{Kind: &pb.Type_PrecisionTimestampTz{PrecisionTimestampTz: &pb.Type_PrecisionTimestampTZ{Precision: prec, Nullability: n}}}, nil
		}
		return &pb.Type{Kind: &pb.Type_PrecisionTimestamp_{PrecisionTimestamp: &pb.Type_PrecisionTimestamp{Precision: prec, Nullability: n}}}, nil
	case *arrow.Time64Type:
		return &pb.Type{Kind: &pb.Type_PrecisionTime_{PrecisionTime: &pb.Type_PrecisionTime{Precision: unitPrecision(t.Unit), Nullability: n}}}, nil
	case *arrow.Time32Type:
		return &pb.Type{Kind: &pb.Type_PrecisionTime_{PrecisionTime: &pb.Type_PrecisionTime{Precision: unitPrecision(t.Unit), Nullability: n}}}, nil
	case *arrow.ListType:
		e, err := typeOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return &pb.Type{Kind: &pb.Type_List_{List: &pb.Type_List{Type: e, Nullability: n}}}, nil
	case *arrow.MapType:
		k, err := typeOf(t.KeyType())
		if err != nil {
			return nil, err
		}
		v, err := typeOf(t.ItemType())
		if err != nil {
			return nil, err
		}
		return &pb.Type{Kind: &pb.Type_Map_{Map: &pb.Type_Map{Key: k, Value: v, Nullability: n}}}, nil
	}
	return nil, noForm("type %s", dt)
}

func unitPrecision(u arrow.TimeUnit) int32 {
	return [...]int32{0, 3, 6, 9}[u]
}

// literal writes a constant; NULL keeps its type.
func literal(s scalar.Scalar) (*pb.Expression_Literal, error) {
	if !s.IsValid() {
		t, err := typeOf(s.DataType())
		if err != nil {
			return nil, err
		}
		return &pb.Expression_Literal{LiteralType: &pb.Expression_Literal_Null{Null: t}}, nil
	}
	l := &pb.Expression_Literal{Nullable: true}
	switch v := s.(type) {
	case *scalar.Boolean:
		l.LiteralType = &pb.Expression_Literal_Boolean{Boolean: v.Value}
	case *scalar.Int8:
		l.LiteralType = &pb.Expression_Literal_I8{I8: int32(v.Value)}
	case *scalar.Int16:
		l.LiteralType = &pb.Expression_Literal_I16{I16: int32(v.Value)}
	case *scalar.Int32:
		l.LiteralType = &pb.Expression_Literal_I32{I32: v.Value}
	case *scalar.Int64:
		l.LiteralType = &pb.Expression_Literal_I64{I64: v.Value}
	case *scalar.Float32:
		l.LiteralType = &pb.Expression_Literal_Fp32{Fp32: v.Value}
	case *scalar.Float64:
		l.LiteralType = &pb.Expression_Literal_Fp64{Fp64: v.Value}
	case *scalar.String:
		l.LiteralType = &pb.Expression_Literal_String_{String_: string(v.Value.Bytes())}
	case *scalar.Binary:
		l.LiteralType = &pb.Expression_Literal_Binary{Binary: append([]byte{}, v.Value.Bytes()...)}
	case *scalar.Date32:
		l.LiteralType = &pb.Expression_Literal_Date{Date: int32(v.Value)}
	case *scalar.Decimal128:
		t := v.Type.(*arrow.Decimal128Type)
		l.LiteralType = &pb.Expression_Literal_Decimal_{Decimal: &pb.Expression_Literal_Decimal{Value: decimalBytes(v.Value), Precision: t.Precision, Scale: t.Scale}}
	case *scalar.Timestamp:
		t := v.Type.(*arrow.TimestampType)
		prec := unitPrecision(t.Unit)
		if t.TimeZone != "" {
			l.LiteralType = &pb.Expression_Literal_PrecisionTimestampTz{PrecisionTimestampTz: &pb.Expression_Literal_PrecisionTimestamp{Precision: prec, Value: int64(v.Value)}}
		} else {
			l.LiteralType = &pb.Expression_Literal_PrecisionTimestamp_{PrecisionTimestamp: &pb.Expression_Literal_PrecisionTimestamp{Precision: prec, Value: int64(v.Value)}}
		}
	case *scalar.MonthDayNanoInterval:
		switch {
		case v.Value.Days == 0 && v.Value.Nanoseconds == 0:
			l.LiteralType = &pb.Expression_Literal_IntervalYearToMonth_{IntervalYearToMonth: &pb.Expression_Literal_IntervalYearToMonth{Months: v.Value.Months}}
		case v.Value.Months == 0:
			l.LiteralType = &pb.Expression_Literal_IntervalDayToSecond_{IntervalDayToSecond: &pb.Expression_Literal_IntervalDayToSecond{
				Days: v.Value.Days, Seconds: int32(v.Value.Nanoseconds / 1e9),
				PrecisionMode: &pb.Expression_Literal_IntervalDayToSecond_Precision{Precision: 9}, Subseconds: v.Value.Nanoseconds % 1e9}}
		default:
			return nil, noForm("an interval of months and days")
		}
	default:
		return nil, noForm("a constant of type %s", s.DataType())
	}
	return l, nil
}

// decimalBytes is v as 16 little-endian two's-complement bytes.
func decimalBytes(v decimal128.Num) []byte {
	b := v.BigInt()
	if b.Sign() < 0 {
		b = new(big.Int).Add(b, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	be := b.FillBytes(make([]byte, 16))
	le := make([]byte, 16)
	for i := range be {
		le[15-i] = be[i]
	}
	return le
}

// notIn writes a null-aware anti join (NOT IN (subquery)) on one key
// equality as a filter NOT (key IN (subquery)), which has its NULL
// semantics; Substrait has no such join.
func (p *producer) notIn(x *plan.JoinNode, left, right *pb.Rel, lcols, rcols []plan.ColumnID) (*pb.Rel, []plan.ColumnID, error) {
	eq, ok := x.Cond.(*plan.Call)
	if !ok || eq.Fn != "equal" || len(eq.Args) != 2 {
		return nil, nil, noForm("a null-aware anti join on %v", x.Cond)
	}
	needle, err := p.expr(eq.Args[0], lcols)
	if err != nil {
		return nil, nil, noForm("a null-aware anti join on %v", x.Cond)
	}
	key, err := p.expr(eq.Args[1], rcols)
	if err != nil {
		return nil, nil, noForm("a null-aware anti join on %v", x.Cond)
	}
	hay := &pb.Rel{RelType: &pb.Rel_Project{Project: &pb.ProjectRel{Input: right, Expressions: []*pb.Expression{key}, Common: emit(1, len(rcols))}}}
	in := &pb.Expression{RexType: &pb.Expression_Subquery_{Subquery: &pb.Expression_Subquery{SubqueryType: &pb.Expression_Subquery_InPredicate_{
		InPredicate: &pb.Expression_Subquery_InPredicate{Needles: []*pb.Expression{needle}, Haystack: hay}}}}}
	boolType, _ := typeOf(arrow.FixedWidthTypes.Boolean)
	not := &pb.Expression{RexType: &pb.Expression_ScalarFunction_{ScalarFunction: &pb.Expression_ScalarFunction{
		FunctionReference: p.fn("not"), OutputType: boolType, Arguments: []*pb.FunctionArgument{{ArgType: &pb.FunctionArgument_Value{Value: in}}}}}}
	return &pb.Rel{RelType: &pb.Rel_Filter{Filter: &pb.FilterRel{Input: left, Condition: not}}}, lcols, nil
}
