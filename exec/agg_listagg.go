package exec

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/vectorized"
)

// resolveListagg is Flink's LISTAGG(s [, separator]): the group's non-NULL
// strings in input order (which SQL leaves undefined) joined by the
// separator, ',' by default; NULL for a group without any.
func resolveListagg(types []arrow.DataType) (*aggDef, bool) {
	if len(types) < 1 || len(types) > 2 {
		return nil, false
	}
	for _, t := range types {
		if !vectorized.IsString(t) && t.ID() != arrow.NULL {
			return nil, false
		}
	}
	return &aggDef{ret: strType, arity: len(types), make: func() accumulator { return &listaggAcc{} }}, true
}

type listaggAcc struct {
	vals [][]byte
	seen seen
	size int64
}

func (l *listaggAcc) grow(n int) { l.vals = growTo(l.vals, n); l.seen.grow(n) }

func (l *listaggAcc) update(groups []uint32, args []arrow.Array, mask []bool) error {
	if args[0].DataType().ID() == arrow.NULL {
		return nil
	}
	on := activeRows(args[0], mask)
	for i, g := range groups {
		if !on.at(i) {
			continue
		}
		before := cap(l.vals[g])
		if l.seen[g] {
			sep := ","
			if len(args) == 2 {
				sep = ""
				if args[1].IsValid(i) {
					sep = vectorized.StringAt(args[1], i)
				}
			}
			l.vals[g] = append(l.vals[g], sep...)
		}
		l.vals[g] = append(l.vals[g], vectorized.StringAt(args[0], i)...)
		if err := vectorized.CheckComputedString("LISTAGG", int64(len(l.vals[g]))); err != nil {
			return err
		}
		l.seen[g] = true
		l.size += int64(cap(l.vals[g]) - before)
	}
	return nil
}

func (l *listaggAcc) result(mem memory.Allocator, n int) (arrow.Array, error) {
	var total int64
	for g := 0; g < n; g++ {
		total += int64(len(l.vals[g]))
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("%w: LISTAGG results of %d bytes for %d groups do not fit one Arrow string array", vectorized.ErrTooLarge, total, n)
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(int(total))
	for g := 0; g < n; g++ {
		if !l.seen[g] {
			b.AppendNull()
			continue
		}
		b.BinaryBuilder.Append(l.vals[g])
	}
	return b.NewArray(), nil
}

// moveTo keeps group from as group to, the last one (as minMaxAcc.moveTo,
// callers move to 0).
func (l *listaggAcc) moveTo(from, to int) {
	l.vals = moveState(l.vals, from, to)
	l.seen = moveState(l.seen, from, to)
	l.size = int64(cap(l.vals[to]))
}

// copyGroup clones the bytes: both groups may grow afterwards.
func (l *listaggAcc) copyGroup(from, to int) {
	l.size += int64(len(l.vals[from]) - cap(l.vals[to]))
	l.vals[to] = append([]byte(nil), l.vals[from]...)
	l.seen[to] = l.seen[from]
}

func (l *listaggAcc) bytes() int64 { return l.size }
