package tablestore

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/flightd/flightd/tablestore/meta"
)

// Predicate is a filter the planner pushes into a scan. It is used only to
// skip data: a scan may return rows that do not match (callers re-apply the
// filter) but never drops a matching row.
type Predicate interface{ String() string }

// CmpOp is a comparison operator.
type CmpOp int8

// Comparison operators.
const (
	EQ CmpOp = iota
	NE
	LT
	LE
	GT
	GE
)

func (op CmpOp) String() string {
	switch op {
	case EQ:
		return "="
	case NE:
		return "<>"
	case LT:
		return "<"
	case LE:
		return "<="
	case GT:
		return ">"
	case GE:
		return ">="
	}
	return fmt.Sprintf("CmpOp(%d)", int8(op))
}

func (op CmpOp) negate() CmpOp {
	return [...]CmpOp{NE, EQ, GE, GT, LE, LT}[op]
}

// Compare is "Column Op Value" with SQL semantics (NULL never matches).
type Compare struct {
	Column string
	Op     CmpOp
	Value  scalar.Scalar
}

// In is "Column IN (Values...)".
type In struct {
	Column string
	Values []scalar.Scalar
}

// IsNull is "Column IS NULL".
type IsNull struct{ Column string }

// And matches when all of its predicates match (true when empty).
type And []Predicate

// Or matches when any of its predicates matches (false when empty).
type Or []Predicate

// Not negates a predicate (SQL semantics: NOT of NULL is NULL).
type Not struct{ Pred Predicate }

func (p Compare) String() string {
	return fmt.Sprintf("%s %s %s", p.Column, p.Op, scalarString(p.Value))
}
func (p In) String() string {
	vals := make([]string, len(p.Values))
	for i, v := range p.Values {
		vals[i] = scalarString(v)
	}
	return fmt.Sprintf("%s IN (%s)", p.Column, strings.Join(vals, ", "))
}
func (p IsNull) String() string { return p.Column + " IS NULL" }
func (p And) String() string    { return joinPreds(p, " AND ", "TRUE") }
func (p Or) String() string     { return joinPreds(p, " OR ", "FALSE") }
func (p Not) String() string    { return "NOT (" + predString(p.Pred) + ")" }

func predString(p Predicate) string {
	if p == nil {
		return "TRUE"
	}
	return p.String()
}

func joinPreds(ps []Predicate, sep, empty string) string {
	if len(ps) == 0 {
		return empty
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = "(" + predString(p) + ")"
	}
	return strings.Join(parts, sep)
}

func scalarString(s scalar.Scalar) string {
	if s == nil || !s.IsValid() {
		return "NULL"
	}
	switch s.(type) {
	case *scalar.String, *scalar.LargeString:
		return "'" + strings.ReplaceAll(s.String(), "'", "''") + "'"
	}
	return s.String()
}

// predColumns appends the columns p refers to.
func predColumns(p Predicate, out []string) ([]string, error) {
	switch p := p.(type) {
	case nil:
	case Compare:
		out = append(out, p.Column)
	case In:
		out = append(out, p.Column)
	case IsNull:
		out = append(out, p.Column)
	case And:
		for _, c := range p {
			var err error
			if out, err = predColumns(c, out); err != nil {
				return nil, err
			}
		}
	case Or:
		for _, c := range p {
			var err error
			if out, err = predColumns(c, out); err != nil {
				return nil, err
			}
		}
	case Not:
		return predColumns(p.Pred, out)
	default:
		return nil, fmt.Errorf("%w: unsupported predicate %T", ErrInvalid, p)
	}
	return out, nil
}

// colRange is what statistics say about one column of a file, row group or
// partition.
type colRange struct {
	min, max  *meta.Datum // nil: unknown
	nullCount int64       // -1: unknown
	rowCount  int64
}

// statsFunc returns the range of a column and the column's type for
// literal conversion; ok is false when nothing is known.
type statsFunc func(col string) (r colRange, ok bool, lit func(scalar.Scalar) (meta.Datum, bool))

// mayMatch reports whether any row described by stats can satisfy p.
func mayMatch(p Predicate, stats statsFunc) bool {
	return eval(p, false, stats)
}

// eval evaluates p (negated when neg) conservatively: false only when no
// row can match.
func eval(p Predicate, neg bool, stats statsFunc) bool {
	switch p := p.(type) {
	case nil:
		return true
	case And:
		if neg {
			return evalAny(p, true, stats)
		}
		return evalAll(p, false, stats)
	case Or:
		if neg {
			return evalAll(p, true, stats)
		}
		return evalAny(p, false, stats)
	case Not:
		return eval(p.Pred, !neg, stats)
	case IsNull:
		r, ok, _ := stats(p.Column)
		if !ok || r.nullCount < 0 {
			return true
		}
		if neg {
			return r.nullCount < r.rowCount
		}
		return r.nullCount > 0
	case Compare:
		op := p.Op
		if neg {
			op = op.negate()
		}
		r, ok, lit := stats(p.Column)
		if !ok {
			return true
		}
		if r.nullCount >= 0 && r.nullCount == r.rowCount {
			return false // comparisons with NULL never match
		}
		v, ok := lit(p.Value)
		if !ok || r.min == nil || r.max == nil {
			return true
		}
		return rangeMayMatch(op, v, *r.min, *r.max)
	case In:
		r, ok, lit := stats(p.Column)
		if !ok {
			return true
		}
		if r.nullCount >= 0 && r.nullCount == r.rowCount {
			return false
		}
		if neg {
			// NOT IN can only be ruled out when every value equals one literal.
			if len(p.Values) == 0 {
				return true
			}
			for _, s := range p.Values {
				v, ok := lit(s)
				if !ok || r.min == nil || r.max == nil || rangeMayMatch(NE, v, *r.min, *r.max) {
					return true
				}
			}
			return false
		}
		for _, s := range p.Values {
			v, ok := lit(s)
			if !ok || r.min == nil || r.max == nil || rangeMayMatch(EQ, v, *r.min, *r.max) {
				return true
			}
		}
		return false
	}
	return true
}

func evalAll(ps []Predicate, neg bool, stats statsFunc) bool {
	for _, c := range ps {
		if !eval(c, neg, stats) {
			return false
		}
	}
	return true
}

func evalAny(ps []Predicate, neg bool, stats statsFunc) bool {
	if len(ps) == 0 {
		return false
	}
	for _, c := range ps {
		if eval(c, neg, stats) {
			return true
		}
	}
	return false
}

// rangeMayMatch reports whether some x in [lo, hi] satisfies "x op v".
func rangeMayMatch(op CmpOp, v, lo, hi meta.Datum) bool {
	cl, ok1 := meta.CompareDatum(lo, v)
	ch, ok2 := meta.CompareDatum(hi, v)
	if !ok1 || !ok2 {
		return true
	}
	switch op {
	case EQ:
		return cl <= 0 && ch >= 0
	case NE:
		return !(cl == 0 && ch == 0)
	case LT:
		return cl < 0
	case LE:
		return cl <= 0
	case GT:
		return ch > 0
	case GE:
		return ch >= 0
	}
	return true
}
