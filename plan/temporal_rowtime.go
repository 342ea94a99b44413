package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/sql"
	"github.com/flightd/flightd/stream"
)

// Event-time temporal joins: `s JOIN d FOR SYSTEM_TIME AS OF s.ts ON
// s.k = d.pk`, ts the WATERMARK column of s's table and d a versioned
// table (a primary key and a WATERMARK on a stored column) read as a
// stream: each change of d is a version of its key from its event time
// on, and each row of s meets the version of its key at s.ts, once the
// watermark has passed s.ts (stream.RowtimeTemporal). In batch there is
// no history of d's versions to join: the join needs d read as a stream.

// eventTimeAsOf reports whether the AS OF column of tn (a column of the
// left side ln, scope ls) is not a PROCTIME() attribute: an event-time
// temporal join.
func (b *binder) eventTimeAsOf(tn *sql.TableName, ln Node, ls *scope) bool {
	at := b.lookup(&scope{cols: ls.cols}, tn.SystemTime.(*sql.Ident))
	return !isProctime(ln, at.ID)
}

// checkRowtimeTemporal checks the sides of an event-time temporal join
// and marks jn: AS OF a timestamp of the left side, and scan a versioned
// table read as a stream.
func (b *binder) checkRowtimeTemporal(tn *sql.TableName, jn *JoinNode, scan *ScanNode, ls *scope) {
	at := b.lookup(&scope{cols: ls.cols}, tn.SystemTime.(*sql.Ident))
	if _, ok := at.Typ.(*arrow.TimestampType); !ok {
		b.fail(tn.SystemTime.Position(), "FOR SYSTEM_TIME AS OF %s: %s is %s, neither a processing-time attribute (PROCTIME()) nor an event time (a timestamp)", sql.Format(tn.SystemTime), at.Name, at.Typ)
	}
	_, wm := tableComputed(scan.Table.Options())
	if len(scan.Table.PrimaryKey()) == 0 || wm == nil {
		b.fail(tn.Pos, "FOR SYSTEM_TIME AS OF %s (an event time, not PROCTIME()) joins the versions of a versioned table: %s needs a primary key and a WATERMARK", sql.Format(tn.SystemTime), scan.Label)
	}
	if scan.Stream == nil {
		b.failWrap(tn.Pos, ErrNotImplemented, "FOR SYSTEM_TIME AS OF %s (an event time, not PROCTIME()) reads the versions of %s from its changelog: read it as a stream (a scan.mode hint, 'latest-full'); the batch form, over a table's history, is not implemented", sql.Format(tn.SystemTime), scan.Label)
	}
	i := slices.Index(scan.Names, wm.rowtime)
	if i < 0 {
		b.notImplemented(tn.Pos, "an event-time temporal join with a table whose WATERMARK column is computed")
	}
	jn.AsOf, jn.VersionTime = at, colRef(scan.Cols[i])
}

// sRowtimeTemporal is an event-time temporal join: l's changes meet the
// versions r (d's source) gives, filtered by filter (nil: none); lkeys and
// rkeys fix d's primary key, residual is the rest of the condition (an
// inner join's only), cs the columns without row kinds.
type sRowtimeTemporal struct {
	l            sNode
	r            *sSource
	n            *JoinNode
	filter       Expr
	lkeys, rkeys []Expr
	residual     Expr
	cs           []Column
}

func (s *sRowtimeTemporal) cols() []Column { return s.cs }

// planRowtimeTemporal plans an event-time temporal join.
func (p *streamPlanner) planRowtimeTemporal(x *JoinNode) sNode {
	l, r := p.plan(x.Left), p.plan(x.Right)
	p.stateful, p.eventTime = true, true
	if at, ok := x.AsOf.(*ColRef); !ok || !p.rowtimes[at.ID] {
		p.refuse("FOR SYSTEM_TIME AS OF %s: an event-time temporal join is by the WATERMARK column of the left side's table (its event time)", x.AsOf)
	}
	t := &sRowtimeTemporal{l: l, n: x}
	switch y := r.(type) {
	case *sSource:
		t.r = y
	case *sFilter:
		t.r, _ = y.in.(*sSource)
		t.filter = y.pred
	}
	if t.r == nil {
		p.refuse("an event-time temporal join reads the versions straight from its table (with filters only)")
	}
	scan := t.r.scan
	left := colSet(x.Left.Columns())
	used := map[int]bool{}
	for _, k := range scan.Table.PrimaryKey() {
		i := slices.IndexFunc(x.RightKeys, func(e Expr) bool { return scanColumn(e, scan) == k })
		if i < 0 || !onlyColumns(x.LeftKeys[i], left) {
			p.refuse("an event-time temporal join joins the versions of %s by its primary key (%s): the condition needs `<expression of the left side> = %s`", scan.Label, strings.Join(scan.Table.PrimaryKey(), ", "), k)
		}
		used[i] = true
		t.lkeys, t.rkeys = append(t.lkeys, x.LeftKeys[i]), append(t.rkeys, x.RightKeys[i])
	}
	var rest []Expr
	for i := range x.LeftKeys {
		if !used[i] {
			rest = append(rest, &Call{Fn: "equal", Args: []Expr{x.LeftKeys[i], x.RightKeys[i]}, Typ: arrow.FixedWidthTypes.Boolean})
		}
	}
	// A condition on the table's columns alone filters its versions (a
	// version it rejects is no row, as the join condition would reject
	// it); the rest applies to the joined rows.
	right := colSet(x.Right.Columns())
	var residual []Expr
	for _, c := range append(rest, conjuncts(x.Residual)...) {
		if onlyColumns(c, right) {
			t.filter = andAll(append(conjuncts(t.filter), c))
		} else {
			residual = append(residual, c)
		}
	}
	t.residual = andAll(residual)
	if t.residual != nil && x.Kind == LeftJoin {
		p.refuse("a LEFT event-time temporal join with a condition on both sides beyond the table's key (%s) is not supported yet", t.residual)
	}
	p.checkKind(x.LeftKeys...)
	p.checkKind(x.Residual)
	for _, c := range x.Columns() {
		if !p.kinds[c.ID] {
			t.cs = append(t.cs, c)
		}
	}
	return t
}

// rowtimeTemporal builds an event-time temporal join and, for an inner
// join with a residual condition, the filter of it.
func (sb *streamBuilder) rowtimeTemporal(x *sRowtimeTemporal, l, r stream.Operator) (stream.Operator, error) {
	spec := stream.RowtimeTemporalSpec{Outer: x.n.Kind == LeftJoin}
	lc, rc := x.l.cols(), x.r.cols()
	var err error
	if spec.ProbeKeys, err = compileAll(x.lkeys, sb.layout(lc), sb.params); err != nil {
		return nil, err
	}
	if spec.TableKeys, err = compileAll(x.rkeys, sb.layout(rc), sb.params); err != nil {
		return nil, err
	}
	if spec.ProbeTime, err = sb.compile(x.n.AsOf, lc); err != nil {
		return nil, err
	}
	if spec.TableTime, err = sb.compile(x.n.VersionTime, rc); err != nil {
		return nil, err
	}
	if x.filter != nil {
		if spec.TableFilter, err = sb.compile(x.filter, rc); err != nil {
			return nil, err
		}
	}
	if x.residual == nil {
		return stream.NewRowtimeTemporal(sb.ec, l, r, spec, sb.budget)
	}
	// Tracked here: build tracks the filter above it, which keeps nothing
	// (without this the join's state was lost at a restart).
	j, err := sb.track(stream.NewRowtimeTemporal(sb.ec, l, r, spec, sb.budget))
	if err != nil {
		return nil, err
	}
	pred, err := sb.compile(x.residual, concatCols(lc, rc))
	if err != nil {
		_ = j.Close()
		return nil, err
	}
	return stream.NewFilter(sb.ec, j, pred), nil
}

// rowtimeTemporalString renders an event-time temporal join for EXPLAIN.
func rowtimeTemporalString(x *sRowtimeTemporal) string {
	keys := make([]string, len(x.lkeys))
	for i := range keys {
		keys[i] = fmt.Sprintf("%s = %s", x.rkeys[i], x.lkeys[i])
	}
	s := fmt.Sprintf("RowtimeTemporalJoin %s %s as of %s keys: %s", x.n.Kind, x.r.scan.Label, x.n.AsOf, strings.Join(keys, " AND "))
	if x.filter != nil {
		s += " versions: " + x.filter.String()
	}
	if x.residual != nil {
		s += " residual: " + x.residual.String()
	}
	return s
}
