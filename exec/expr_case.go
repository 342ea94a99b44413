package exec

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/vectorized"
)

// When is one WHEN cond THEN value arm of a CASE.
type When struct {
	Cond Expr
	Then Expr
}

// CaseExpr is a searched CASE. An error in a WHEN condition or value is
// raised only for rows that reach it, so CASE WHEN x <> 0 THEN 1 / x END
// never divides by zero.
type CaseExpr struct {
	Whens []When
	Else  Expr // nil = NULL
	typ   arrow.DataType
}

// NewCase returns CASE WHEN ... THEN ... [ELSE ...] END; the result type is
// the common type of the THEN and ELSE values.
func NewCase(whens []When, elseExpr Expr) (Expr, error) {
	if len(whens) == 0 {
		return nil, fmt.Errorf("%w: CASE needs at least one WHEN", ErrInvalid)
	}
	types := []arrow.DataType{}
	for i, w := range whens {
		if w.Cond.DataType().ID() != arrow.BOOL && w.Cond.DataType().ID() != arrow.NULL {
			return nil, fmt.Errorf("%w: CASE WHEN condition %d (%s) has type %s, not boolean", ErrInvalid, i+1, w.Cond, w.Cond.DataType())
		}
		types = append(types, w.Then.DataType())
	}
	if elseExpr != nil {
		types = append(types, elseExpr.DataType())
	}
	t, ok := commonTypeOf(types)
	if !ok {
		return nil, fmt.Errorf("%w: CASE branches have no common type: %s", ErrInvalid, typesString(types))
	}
	c := &CaseExpr{typ: t}
	for _, w := range whens {
		th, err := castTo(w.Then, t)
		if err != nil {
			return nil, err
		}
		cond := w.Cond
		if cond.DataType().ID() == arrow.NULL {
			cond = NewLiteral(scalar.MakeNullScalar(boolType))
		}
		c.Whens = append(c.Whens, When{Cond: cond, Then: th})
	}
	if elseExpr != nil {
		el, err := castTo(elseExpr, t)
		if err != nil {
			return nil, err
		}
		c.Else = el
	}
	return c, nil
}

// DataType implements Expr.
func (c *CaseExpr) DataType() arrow.DataType { return c.typ }

func (c *CaseExpr) String() string {
	var sb strings.Builder
	sb.WriteString("CASE")
	for _, w := range c.Whens {
		fmt.Fprintf(&sb, " WHEN %s THEN %s", w.Cond, w.Then)
	}
	if c.Else != nil {
		fmt.Fprintf(&sb, " ELSE %s", c.Else)
	}
	sb.WriteString(" END")
	return sb.String()
}

// Eval implements Expr. Each WHEN condition sees only the rows no earlier
// arm took and each value only the rows that chose it; the result is
// assembled once from the arms' values (assembleCase).
func (c *CaseExpr) Eval(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	if r, ok, err := c.maskedColumn(ctx, ec, b); ok {
		return r, err
	}
	if r, ok, err := c.constArms(ctx, ec, b); ok {
		return r, err
	}
	n := int(b.NumRows())
	// pick[i] is the part that decided row i (-1 = none: NULL) and pos[i]
	// the row's position in that part.
	pick := make([]int32, n)
	pos := make([]int32, n)
	for i := range pick {
		pick[i] = -1
	}
	var parts []arrow.Array
	defer func() { releaseArrays(parts) }()
	w := ec.Working() // each arm's values, while the next arms compute
	defer w.Release()
	rows := make([]int64, n) // rows of b still undecided
	for i := range rows {
		rows[i] = int64(i)
	}
	chosen := make([]int64, 0, n)
	for arm := 0; arm <= len(c.Whens) && len(rows) > 0; arm++ {
		then := c.Else
		if arm < len(c.Whens) {
			then = c.Whens[arm].Then
		}
		chosen = chosen[:0]
		if arm == len(c.Whens) {
			if then == nil || isNullConst(then) {
				break
			}
			chosen = append(chosen, rows...)
			rows = rows[:0]
		} else {
			cond, err := evalRows(ctx, ec, c.Whens[arm].Cond, b, rows)
			if err != nil {
				return nil, err
			}
			if cond.arr.DataType().ID() != arrow.BOOL {
				cond.arr.Release()
				return nil, fmt.Errorf("%w: CASE WHEN condition %s has type %s, not boolean", ErrInvalid, c.Whens[arm].Cond, cond.arr.DataType())
			}
			mask, _ := vectorized.TrueMask(cond.arr)
			cond.arr.Release()
			left := rows[:0]
			for j, r := range rows {
				if mask[cond.at(j, r)] {
					chosen = append(chosen, r)
				} else {
					left = append(left, r)
				}
			}
			rows = left
			if len(chosen) == 0 || isNullConst(then) {
				continue
			}
		}
		v, err := evalRows(ctx, ec, then, b, chosen)
		if err != nil {
			return nil, err
		}
		if err := w.Hold(then, v.arr); err != nil {
			v.arr.Release()
			return nil, err
		}
		parts = append(parts, v.arr)
		for j, r := range chosen {
			pick[r], pos[r] = int32(len(parts)-1), int32(v.at(j, r))
		}
	}
	if len(parts) == 1 && parts[0].Len() == n && !slices.Contains(pick, -1) {
		parts[0].Retain()
		return parts[0], nil
	}
	return assembleCase(ec.Mem, c.typ, parts, pick, pos), nil
}

// maskedColumn evaluates CASE WHEN cond THEN column [ELSE NULL] END, the
// pivot of TPC-DS's week-by-day sums (q02, q43, q59), without gathering:
// the column's buffers with a validity bitmap that also clears the rows
// cond does not select. ok is false for other forms.
func (c *CaseExpr) maskedColumn(ctx context.Context, ec *Context, b arrow.RecordBatch) (_ arrow.Array, ok bool, _ error) {
	if len(c.Whens) != 1 || c.Else != nil && !isNullConst(c.Else) {
		return nil, false, nil
	}
	col, isCol := c.Whens[0].Then.(*ColumnExpr)
	if !isCol || !arrow.TypeEqual(col.Type, c.typ) || c.typ.ID() == arrow.NULL || c.typ.ID() == arrow.DICTIONARY {
		return nil, false, nil
	}
	x, err := col.Eval(ctx, ec, b)
	if err != nil {
		return nil, true, err
	}
	defer x.Release()
	xd := x.Data()
	if len(xd.Children()) > 0 {
		return nil, false, nil
	}
	cond, err := c.firstCond(ctx, ec, b)
	if err != nil {
		return nil, true, err
	}
	defer cond.Release()
	mask, _ := vectorized.TrueBits(ec.Mem, cond)
	defer mask.Release()
	n, off := x.Len(), xd.Offset()
	valid := memory.NewResizableBuffer(ec.Mem)
	defer valid.Release()
	valid.Resize(int(bitutil.BytesForBits(int64(off + n))))
	maskBits := mask.Data().Buffers()[1].Bytes()
	if vectorized.MayHaveNulls(xd) { // not x.NullN(): counting races on a batch parallel workers share
		bitutil.BitmapAnd(maskBits, xd.Buffers()[0].Bytes(), 0, int64(off), valid.Bytes(), int64(off), int64(n))
	} else {
		bitutil.CopyBitmap(maskBits, 0, n, valid.Bytes(), off)
	}
	data := array.NewData(c.typ, n, append([]*memory.Buffer{valid}, xd.Buffers()[1:]...), nil, array.UnknownNullCount, off)
	defer data.Release()
	return array.MakeFromData(data), true, nil
}

// constArms evaluates CASE WHEN cond THEN k1 [ELSE k2] END whose arms are
// constants, the 0/1 counters q62 and q99 sum, from cond's mask over the
// whole batch: no lists of undecided and chosen rows. As in the general
// path an arm is evaluated only when some row takes it. ok is false for
// other forms.
func (c *CaseExpr) constArms(ctx context.Context, ec *Context, b arrow.RecordBatch) (_ arrow.Array, ok bool, _ error) {
	if len(c.Whens) != 1 || !isConst(c.Whens[0].Then) || c.Else != nil && !isConst(c.Else) || b.NumRows() == 0 {
		return nil, false, nil
	}
	n := int(b.NumRows())
	cond, err := c.firstCond(ctx, ec, b)
	if err != nil {
		return nil, true, err
	}
	defer cond.Release()
	sel, taken := vectorized.TrueBits(ec.Mem, cond) // the rows the WHEN takes
	defer sel.Release()
	sb := sel.Data().Buffers()[1].Bytes()
	var parts []arrow.Array
	defer func() { releaseArrays(parts) }()
	// part returns the index in parts of arm e's one value, -1 for NULL.
	part := func(e Expr, rows int) (int32, error) {
		if rows == 0 || e == nil || isNullConst(e) {
			return -1, nil
		}
		v, err := evalRows(ctx, ec, e, b, nil)
		if err != nil {
			return 0, err
		}
		parts = append(parts, v.arr)
		return int32(len(parts) - 1), nil
	}
	then, err := part(c.Whens[0].Then, taken)
	if err != nil {
		return nil, true, err
	}
	els, err := part(c.Else, n-taken)
	if err != nil {
		return nil, true, err
	}
	if fw, ok := c.typ.(arrow.FixedWidthDataType); ok && fw.BitWidth() >= 8 {
		switch fw.BitWidth() {
		case 8:
			return constSelect[uint8](ec.Mem, c.typ, sb, taken, n, parts, then, els, 1), true, nil
		case 16:
			return constSelect[uint16](ec.Mem, c.typ, sb, taken, n, parts, then, els, 1), true, nil
		case 32:
			return constSelect[uint32](ec.Mem, c.typ, sb, taken, n, parts, then, els, 1), true, nil
		case 64:
			return constSelect[uint64](ec.Mem, c.typ, sb, taken, n, parts, then, els, 1), true, nil
		case 128:
			return constSelect[uint64](ec.Mem, c.typ, sb, taken, n, parts, then, els, 2), true, nil
		}
	}
	for _, arm := range []struct {
		part int32
		rows int
	}{{then, taken}, {els, n - taken}} {
		if v, ok := partValue(parts, arm.part).(array.BinaryLike); ok {
			if err := checkCopies(v.ValueLen(0), arm.rows); err != nil {
				return nil, true, err
			}
		}
	}
	pick := make([]int32, n)
	for i := range pick {
		pick[i] = els
		if bitutil.BitIsSet(sb, i) {
			pick[i] = then
		}
	}
	return assembleCase(ec.Mem, c.typ, parts, pick, make([]int32, n)), true, nil
}

// partValue is parts[i], nil for -1 (NULL) or a NULL value.
func partValue(parts []arrow.Array, i int32) arrow.Array {
	if i < 0 || parts[i].IsNull(0) {
		return nil
	}
	return parts[i]
}

// firstCond evaluates the first WHEN condition over the whole batch, for
// the one-arm forms (maskedColumn, constArms).
func (c *CaseExpr) firstCond(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	e := c.Whens[0].Cond
	cond, err := e.Eval(ctx, ec, b)
	if err != nil {
		return nil, err
	}
	if cond.DataType().ID() != arrow.BOOL {
		cond.Release()
		return nil, fmt.Errorf("%w: CASE WHEN condition %s has type %s, not boolean", ErrInvalid, e, cond.DataType())
	}
	if cond.Len() != int(b.NumRows()) {
		cond.Release()
		return nil, fmt.Errorf("%w: %s produced %d rows for %d", ErrInvalid, e, cond.Len(), b.NumRows())
	}
	return cond, nil
}

// isNullConst reports whether e is a NULL literal, possibly cast: such an
// arm leaves its rows NULL without being evaluated.
func isNullConst(e Expr) bool {
	l, ok := uncast(e).(*LiteralExpr)
	return ok && !l.Value.IsValid()
}

// isConst reports whether e is a literal, possibly cast: one row of it
// stands for every row.
func isConst(e Expr) bool {
	_, ok := uncast(e).(*LiteralExpr)
	return ok
}

// uncast strips the casts around e.
func uncast(e Expr) Expr {
	for {
		c, ok := e.(*CastExpr)
		if !ok {
			return e
		}
		e = c.Input
	}
}

// armValues is an expression evaluated for some rows of a batch: arr holds
// one value for all of them (konst), a value per batch row (full), or a
// value per requested row.
type armValues struct {
	arr   arrow.Array
	konst bool
	full  bool
}

// at returns the position in v.arr of the j-th requested row, batch row r.
func (v armValues) at(j int, r int64) int {
	switch {
	case v.konst:
		return 0
	case v.full:
		return int(r)
	}
	return j
}

// evalRows evaluates e for rows of b without evaluating it on other rows
// where that could fail: it evaluates on the whole batch when the rows
// are all of it, when e only reads a column, or, when most rows are
// wanted, tentatively (an error there retries on the rows alone, so an
// error in a row nobody asked for is not reported). Otherwise it gathers
// the columns e reads at rows and evaluates on those.
func evalRows(ctx context.Context, ec *Context, e Expr, b arrow.RecordBatch, rows []int64) (armValues, error) {
	v, err := evalRowsUnchecked(ctx, ec, e, b, rows)
	if err != nil {
		return armValues{}, err
	}
	want := len(rows)
	switch {
	case v.konst:
		want = 1
	case v.full:
		want = int(b.NumRows())
	}
	if v.arr.Len() != want {
		v.arr.Release()
		return armValues{}, fmt.Errorf("%w: %s produced %d rows for %d", ErrInvalid, e, v.arr.Len(), want)
	}
	return v, nil
}

var noColumns = arrow.NewSchema(nil, nil)

func evalRowsUnchecked(ctx context.Context, ec *Context, e Expr, b arrow.RecordBatch, rows []int64) (armValues, error) {
	n := int(b.NumRows())
	if isConst(e) {
		// A constant reads no column: one row of no columns, not a slice
		// of each of b's.
		one := array.NewRecordBatch(noColumns, nil, 1)
		defer one.Release()
		a, err := e.Eval(ctx, ec, one)
		return armValues{arr: a, konst: true}, err
	}
	_, isCol := e.(*ColumnExpr)
	if len(rows) == n || isCol || 2*len(rows) >= n || batchCheap(e) {
		a, err := e.Eval(ctx, ec, b)
		if err == nil || len(rows) == n || isCol || ctx.Err() != nil {
			return armValues{arr: a, full: true}, err
		}
	}
	sub, se, err := gatherFor(ctx, ec, e, b, rows)
	if err != nil {
		return armValues{}, err
	}
	defer sub.Release()
	a, err := se.Eval(ctx, ec, sub)
	return armValues{arr: a}, err
}

// gatherFor returns the rows of b that e reads as a batch of only the
// columns it reads, and e remapped to that batch (all columns when
// NarrowExpr cannot narrow e).
func gatherFor(ctx context.Context, ec *Context, e Expr, b arrow.RecordBatch, rows []int64) (arrow.RecordBatch, Expr, error) {
	cols, schema, ne, ok := NarrowExpr(e, b.Schema())
	if !ok {
		sub, err := vectorized.TakeBatch(ctx, ec.Mem, b, b.Schema(), rows)
		return sub, e, err
	}
	in := make([]arrow.Array, len(cols))
	for i, c := range cols {
		in[i] = b.Column(c)
	}
	out, err := vectorized.TakeColumns(ctx, ec.Mem, in, rows)
	if err != nil {
		return nil, nil, err
	}
	sub := array.NewRecordBatch(schema, out, int64(len(rows)))
	releaseArrays(out)
	return sub, ne, nil
}

// InExpr is SQL e IN (list) with three-valued logic: true if e equals an
// element, NULL if e is NULL or no element matches but one is NULL, else
// false.
type InExpr struct {
	Input Expr
	List  []Expr
	// set is used when every element is a literal; consts holds its
	// elements when there are few (compared one by one).
	set     map[string]struct{}
	consts  []scalar.Scalar
	setNull bool
	or      Expr // otherwise an OR of equalities
}

// NewIn returns e IN (list).
func NewIn(e Expr, list []Expr) (Expr, error) {
	if len(list) == 0 {
		return nil, fmt.Errorf("%w: IN needs a non-empty list", ErrInvalid)
	}
	types := []arrow.DataType{e.DataType()}
	var lits []*LiteralExpr
	for _, x := range list {
		types = append(types, x.DataType())
		if l, ok := x.(*LiteralExpr); ok {
			lits = append(lits, l)
		}
	}
	allLit := len(lits) == len(list)
	t, ok := commonTypeOf(types)
	if !ok {
		return nil, fmt.Errorf("%w: IN list has no common type: %s", ErrInvalid, typesString(types))
	}
	if vectorized.IsNested(t) {
		// A nested literal's NULL parts make = NULL, which the set of
		// encoded keys cannot tell: compare one by one.
		allLit = false
	}
	if allLit {
		t = compareIn(e, lits, t)
	}
	in := &InExpr{List: list}
	var err error
	if in.Input, err = castTo(e, t); err != nil {
		return nil, err
	}
	if !allLit {
		var or Expr
		for _, x := range list {
			eq, err := NewCall("equal", in.Input, x)
			if err != nil {
				return nil, err
			}
			if or == nil {
				or = eq
			} else if or, err = NewCall("or", or, eq); err != nil {
				return nil, err
			}
		}
		in.or = or
		return in, nil
	}
	in.set = map[string]struct{}{}
	for _, x := range list {
		s := x.(*LiteralExpr).Value
		if !s.IsValid() {
			in.setNull = true
			continue
		}
		c, err := castScalar(s, t)
		if err != nil {
			return nil, fmt.Errorf("%w: IN element %s: %v", ErrInvalid, x, err)
		}
		key, err := scalarKey(c)
		if err != nil {
			return nil, fmt.Errorf("%w: IN element %s: %v", ErrInvalid, x, err)
		}
		if _, dup := in.set[key]; !dup {
			in.set[key] = struct{}{}
			in.consts = append(in.consts, c)
		}
	}
	if len(in.consts) > inCompareMax {
		in.consts = nil
	}
	return in, nil
}

// inCompareMax is the longest IN list of constants compared one by one
// (CompareScalar per constant) rather than looked up in a hash set: for
// 64K rows, 8 comparisons take 0.1x the hash lookups' time for int64 and
// 0.3x for strings (BenchmarkInList).
const inCompareMax = 16

// scalarKey encodes a scalar the way KeyEncoder encodes a row.
func scalarKey(s scalar.Scalar) (string, error) {
	// Plan-time constant, freed at once: not part of any execution's budget.
	mem := memory.NewGoAllocator()
	a, err := scalar.MakeArrayFromScalar(s, 1, mem)
	if err != nil {
		return "", err
	}
	defer a.Release()
	var enc vectorized.KeyEncoder
	if err := enc.Encode([]arrow.Array{a}, 1); err != nil {
		return "", err
	}
	return string(enc.Key(0)), nil
}

// DataType implements Expr.
func (in *InExpr) DataType() arrow.DataType { return boolType }

func (in *InExpr) String() string {
	return fmt.Sprintf("%s IN (%s)", in.Input, exprsString(in.List))
}

// Eval implements Expr.
func (in *InExpr) Eval(ctx context.Context, ec *Context, b arrow.RecordBatch) (arrow.Array, error) {
	if in.or != nil {
		return in.or.Eval(ctx, ec, b)
	}
	a, err := in.Input.Eval(ctx, ec, b)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	if in.consts != nil || len(in.set) == 0 {
		return vectorized.InScalars(ec.Mem, a, in.consts, in.setNull)
	}
	n := a.Len()
	var enc vectorized.KeyEncoder
	if err := enc.Encode([]arrow.Array{a}, n); err != nil {
		return nil, err
	}
	vals := make([]bool, n)
	valid := make([]bool, n)
	for i := 0; i < n; i++ {
		if a.IsNull(i) {
			continue
		}
		_, hit := in.set[string(enc.Key(i))]
		vals[i] = hit
		valid[i] = hit || !in.setNull
	}
	return vectorized.BoolsToArray(ec.Mem, vals, valid), nil
}
