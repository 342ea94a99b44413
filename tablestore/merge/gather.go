package merge

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Ref names row Row of source Src (a run's batch, or a buffered batch).
type Ref struct{ Src, Row int32 }

// Gather builds the array of the referenced rows of srcs (all of type dt):
// a take over several arrays, which the k-way merge needs to assemble its
// output without a copy per cell through a builder.
func Gather(mem memory.Allocator, dt arrow.DataType, srcs []arrow.Array, refs []Ref) arrow.Array {
	if dt.ID() == arrow.LIST || dt.ID() == arrow.MAP {
		return gatherNested(mem, srcs, refs)
	}
	n := len(refs)
	bufs := []*memory.Buffer{nil}
	nulls := 0
	for _, s := range srcs {
		if s.NullN() > 0 {
			vb := newBuf(mem, int(bitutil.BytesForBits(int64(n))))
			bm := vb.Bytes()
			for i, r := range refs {
				if srcs[r.Src].IsValid(int(r.Row)) {
					bitutil.SetBit(bm, i)
				} else {
					nulls++
				}
			}
			bufs[0] = vb
			break
		}
	}
	var children []arrow.ArrayData
	switch dt.ID() {
	case arrow.STRUCT:
		// Field by field, each with the fast paths of its own type.
		for f, ft := range dt.(*arrow.StructType).Fields() {
			fsrcs := make([]arrow.Array, len(srcs))
			for k, s := range srcs {
				fsrcs[k] = s.(*array.Struct).Field(f) // sliced like s
			}
			c := Gather(mem, ft.Type, fsrcs, refs)
			c.Data().Retain()
			children = append(children, c.Data())
			c.Release()
		}
	case arrow.BOOL:
		vb := newBuf(mem, int(bitutil.BytesForBits(int64(n))))
		bm := vb.Bytes()
		for i, r := range refs {
			if srcs[r.Src].(*array.Boolean).Value(int(r.Row)) {
				bitutil.SetBit(bm, i)
			}
		}
		bufs = append(bufs, vb)
	case arrow.STRING, arrow.BINARY:
		value := func(r Ref) []byte {
			if s, ok := srcs[r.Src].(*array.String); ok {
				v := s.Value(int(r.Row))
				return unsafe.Slice(unsafe.StringData(v), len(v))
			}
			return srcs[r.Src].(*array.Binary).Value(int(r.Row))
		}
		total := 0
		for _, r := range refs {
			total += len(value(r))
		}
		ob := newBuf(mem, 4*(n+1))
		offs := reinterpret[int32](ob.Bytes())
		db := newBuf(mem, total)
		data := db.Bytes()
		pos := 0
		for i, r := range refs {
			offs[i] = int32(pos)
			pos += copy(data[pos:], value(r))
		}
		offs[n] = int32(pos)
		bufs = append(bufs, ob, db)
	default:
		w := dt.(arrow.FixedWidthDataType).BitWidth() / 8
		vb := newBuf(mem, w*n)
		switch w {
		case 1:
			gatherFixed[uint8](vb, srcs, refs)
		case 2:
			gatherFixed[uint16](vb, srcs, refs)
		case 4:
			gatherFixed[uint32](vb, srcs, refs)
		case 8:
			gatherFixed[uint64](vb, srcs, refs)
		case 16:
			gatherFixed[[2]uint64](vb, srcs, refs)
		default:
			panic("merge: gather: unsupported width")
		}
		bufs = append(bufs, vb)
	}
	data := array.NewData(dt, n, bufs, children, nulls, 0)
	for _, b := range bufs {
		if b != nil {
			b.Release()
		}
	}
	for _, c := range children {
		c.Release()
	}
	defer data.Release()
	return array.MakeFromData(data)
}

func newBuf(mem memory.Allocator, size int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(size)
	clear(b.Bytes())
	return b
}

func reinterpret[T any](b []byte) []T {
	var z T
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// gatherFixed copies fixed-width values, viewing each source's value
// buffer (from its offset) as []T.
func gatherFixed[T any](dst *memory.Buffer, srcs []arrow.Array, refs []Ref) {
	vals := make([][]T, len(srcs))
	for i, s := range srcs {
		vals[i] = reinterpret[T](s.Data().Buffers()[1].Bytes())[s.Data().Offset():]
	}
	out := reinterpret[T](dst.Bytes())
	for i, r := range refs {
		out[i] = vals[r.Src][r.Row]
	}
}

// gatherNested gathers lists and maps by concatenating slices of the
// sources, one per run of consecutive rows of one source (merges mostly
// emit runs), as no own loop handles their layouts.
func gatherNested(mem memory.Allocator, srcs []arrow.Array, refs []Ref) arrow.Array {
	var slices []arrow.Array
	defer func() {
		for _, s := range slices {
			s.Release()
		}
	}()
	for i := 0; i < len(refs); {
		j := i + 1
		for j < len(refs) && refs[j].Src == refs[i].Src && refs[j].Row == refs[j-1].Row+1 {
			j++
		}
		slices = append(slices, array.NewSlice(srcs[refs[i].Src], int64(refs[i].Row), int64(refs[i].Row)+int64(j-i)))
		i = j
	}
	if len(slices) == 0 {
		return array.MakeArrayOfNull(mem, srcs[0].DataType(), 0)
	}
	out, err := array.Concatenate(slices, mem)
	if err != nil {
		// Slices of arrays of one type always concatenate (offsets stay
		// below 2^31 because batches do).
		panic("merge: gatherNested: " + err.Error())
	}
	return out
}
