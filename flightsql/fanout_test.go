package flightsql

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
)

// TestSharedMessagesKey: streams asking for the message of a batch get the
// one encoded for a batch of the same content and label, never another's.
// Random batches from a few shared arrays (as streams of one table share
// the feed's), slices of them at random offsets, copies with equal content
// in other buffers, random labels and codecs, batches released and new
// ones allocated (addresses reused), a small limit (constant eviction),
// from 8 goroutines. Each encode returns a new token recording the
// content it stands for; a get must return a token of its own batch's
// content. Equal content in the same buffers must be encoded once while
// kept. Seed printed.
func TestSharedMessagesKey(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := newSharedMessages(4 << 10)
	defer c.close()

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "kind", Type: arrow.BinaryTypes.String},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	build := func(rng *rand.Rand, rows int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for range rows {
			b.Field(0).(*array.StringBuilder).Append([]string{"+I", "-U", "+U", "-D"}[rng.IntN(4)])
			if rng.IntN(5) == 0 {
				b.Field(1).AppendNull()
			} else {
				b.Field(1).(*array.Int64Builder).Append(rng.Int64N(4))
			}
			b.Field(2).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		}
		return b.NewRecordBatch()
	}
	content := func(b arrow.RecordBatch, meta []byte, codec string) string {
		var sb strings.Builder
		for i := range int(b.NumCols()) {
			fmt.Fprintf(&sb, "%v|", b.Column(i))
		}
		return sb.String() + string(meta) + "|" + codec
	}

	var mu sync.Mutex
	tokens := map[*grpc.PreparedMsg]string{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(g)))
			shared := build(rng, 1+rng.IntN(20))
			defer func() { shared.Release() }()
			for range 400 {
				var b arrow.RecordBatch
				switch rng.IntN(5) {
				case 0: // the shared batch itself
					b = shared
					b.Retain()
				case 1: // a slice of it
					lo := rng.Int64N(shared.NumRows() + 1)
					b = shared.NewSlice(lo, lo+rng.Int64N(shared.NumRows()-lo+1))
				case 2: // equal content in other buffers
					b = build(rand.New(rand.NewPCG(uint64(seed), uint64(g))), int(shared.NumRows()))
				case 3: // new content, maybe where released batches were
					b = build(rng, rng.IntN(20))
				default: // the next shared batch
					shared.Release()
					shared = build(rng, 1+rng.IntN(20))
					b = shared
					b.Retain()
				}
				meta := []byte(fmt.Sprintf(`{"snapshot":%d}`, rng.IntN(3)))
				codec := []string{"", "zstd"}[rng.IntN(2)]
				want := content(b, meta, codec)
				msg, err := c.get(b, meta, codec, func() (*grpc.PreparedMsg, int64, error) {
					tok := &grpc.PreparedMsg{}
					mu.Lock()
					tokens[tok] = want
					mu.Unlock()
					return tok, int64(1 + rng.IntN(1024)), nil
				})
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				got := tokens[msg]
				mu.Unlock()
				if got != want {
					t.Errorf("got the message of\n%s\nfor\n%s", got, want)
				}
				b.Release()
			}
		}()
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes > c.limit {
		t.Errorf("keeps %d bytes, limit %d", c.bytes, c.limit)
	}
}

// TestSharedMessagesOnce: streams asking at once for the message of one
// batch and label get one encoding, kept until evicted; a label, a codec
// or a slice makes another message; batches with nested columns are
// encoded per stream, not kept.
func TestSharedMessagesOnce(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := newSharedMessages(1 << 20)
	defer c.close()
	b := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil))
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	batch := b.NewRecordBatch()
	b.Release()
	defer batch.Release()
	encode := func() (*grpc.PreparedMsg, int64, error) {
		time.Sleep(time.Millisecond) // let the others come while it encodes
		return &grpc.PreparedMsg{}, 100, nil
	}
	msgs := make([]*grpc.PreparedMsg, 32)
	var wg sync.WaitGroup
	for i := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if msgs[i], err = c.get(batch, []byte("m"), "", encode); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, m := range msgs {
		if m != msgs[0] {
			t.Fatal("streams got different encodings of one message")
		}
	}
	slice := batch.NewSlice(1, 3)
	defer slice.Release()
	for _, ask := range []struct {
		b     arrow.RecordBatch
		meta  string
		codec string
	}{{batch, "m", ""}, {batch, "n", ""}, {batch, "m", "zstd"}, {slice, "m", ""}} {
		if _, err := c.get(ask.b, []byte(ask.meta), ask.codec, encode); err != nil {
			t.Fatal(err)
		}
	}
	if c.encodes != 4 {
		t.Fatalf("%d encodings, want 4 (one per distinct message)", c.encodes)
	}

	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	lb.Append(true)
	lb.ValueBuilder().(*array.Int64Builder).Append(1)
	list := lb.NewArray()
	lb.Release()
	nested := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "l", Type: list.DataType()}}, nil), []arrow.Array{list}, 1)
	list.Release()
	defer nested.Release()
	for range 2 {
		if _, err := c.get(nested, []byte("m"), "", encode); err != nil {
			t.Fatal(err)
		}
	}
	if c.encodes != 4 || len(c.entries) != 4 {
		t.Fatalf("a nested batch was kept: %d encodings, %d entries", c.encodes, len(c.entries))
	}
}

// TestSharedMessagesPinnedBound: kept messages count the buffers their
// batches pin, so small slices of large batches cannot keep more than the
// limit alive: the allocator holds at most the limit after 40 one-row
// slices of distinct 1 MiB batches were sent.
func TestSharedMessagesPinnedBound(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	const limit = 4 << 20
	c := newSharedMessages(limit)
	defer c.close()
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for i := range 40 {
		b := array.NewRecordBuilder(mem, schema)
		b.Field(0).(*array.Int64Builder).AppendValues(make([]int64, 1<<17), nil)
		batch := b.NewRecordBatch()
		b.Release()
		slice := batch.NewSlice(int64(i), int64(i)+1)
		batch.Release()
		if _, err := c.get(slice, nil, "", func() (*grpc.PreparedMsg, int64, error) { return &grpc.PreparedMsg{}, 16, nil }); err != nil {
			t.Fatal(err)
		}
		slice.Release()
		if got := mem.CurrentAlloc(); got > limit {
			t.Fatalf("after %d slices the kept messages pin %d bytes, limit %d", i+1, got, limit)
		}
	}
}

// BenchmarkSharedMessagesFull: gets of new messages into a full cache of
// small messages (markers are a few hundred bytes), each evicting the
// oldest.
func BenchmarkSharedMessagesFull(b *testing.B) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(b, 0)
	c := newSharedMessages(sharedMessagesBytes)
	defer c.close()
	bb := array.NewRecordBuilder(mem, arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil))
	empty := bb.NewRecordBatch()
	bb.Release()
	defer empty.Release()
	encode := func() (*grpc.PreparedMsg, int64, error) { return &grpc.PreparedMsg{}, 300, nil }
	b.ResetTimer()
	for i := range b.N {
		if _, err := c.get(empty, []byte(fmt.Sprintf(`{"snapshot":%d}`, i)), "", encode); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMessageKeyPrefixFree: keys of batches with different column counts
// differ whatever the codec and label: a batch of one empty int64 column
// with a codec made of the second column's key part does not get the key
// of the batch of two such columns.
func TestMessageKeyPrefixFree(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	col := array.MakeArrayOfNull(mem, arrow.PrimitiveTypes.Int64, 0)
	defer col.Release()
	one := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "a", Type: col.DataType()}}, nil), []arrow.Array{col}, 0)
	defer one.Release()
	two := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "a", Type: col.DataType()}, {Name: "b", Type: col.DataType()}}, nil), []arrow.Array{col, col}, 0)
	defer two.Release()
	k1, _, _ := messageKey(one, []byte("m"), "")
	k2, _, _ := messageKey(two, []byte("m"), "")
	// Were the counts left out, k2 would be k1's first column, then the
	// second column's part (starting with the type id, 9), the empty
	// codec's length and "m": read as a codec length, the type id takes
	// the 9 bytes after it as the codec, and "m" stays the label.
	tail := k2[len(k1)-2:]
	n := int(tail[0])
	if 1+n > len(tail) {
		return // no such codec: the keys cannot be equal
	}
	if got, _, _ := messageKey(one, []byte(tail[1+n:]), tail[1:1+n]); got == k2 {
		t.Fatalf("a batch of one column and a batch of two share the key %q", got)
	}
}

// TestEmptyBatchesSchema: markers of schemas with one fingerprint but
// different field metadata (which the fingerprint leaves out and a record
// writer compares) get batches of their own schema.
func TestEmptyBatchesSchema(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var e emptyBatches
	defer e.close()
	plain := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	tagged := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64,
		Metadata: arrow.NewMetadata([]string{"k"}, []string{"v"})}}, nil)
	for _, s := range []*arrow.Schema{plain, tagged, plain, tagged} {
		b := e.get(mem, s)
		if !b.Schema().Equal(s) {
			t.Errorf("a marker of %v got a batch of %v", s, b.Schema())
		}
		b.Release()
	}
}
