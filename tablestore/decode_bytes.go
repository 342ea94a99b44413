package tablestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// pageDecodable reports whether readBytePages can decode a string or
// binary chunk: plain or dictionary values with RLE levels, which is what
// flightd writes. Other writers' encodings (DELTA_BYTE_ARRAY, ...) go
// through arrow-go's column reader.
func pageDecodable(md *metadata.ColumnChunkMetaData) bool {
	for _, e := range md.Encodings() {
		switch e {
		case parquet.Encodings.Plain, parquet.Encodings.PlainDict, parquet.Encodings.RLEDict, parquet.Encodings.RLE:
		default:
			return false
		}
	}
	return true
}

// bytePages decodes a BYTE_ARRAY chunk from its pages. arrow-go's reader
// hands out one []byte header per value and grows its decoded dictionary
// by appending such headers (pointers the GC scans and write barriers),
// which was most of an uncached scan of a nearly unique string column; here
// the dictionary page is indexed in place and values are copied from it or
// from the page by position.
type bytePages struct {
	pr        file.PageReader
	nullable  bool
	chunkRows int64 // rows of the row group: bounds a page's (damaged headers)

	dictOffs []int32 // dictionary value i is dictData[dictOffs[i]+4:dictOffs[i+1]] (after its length)
	dictData []byte
	hasDict  bool

	// The current data page: rows [first, first+rows) of the chunk.
	first, rows int64
	defs        []int32 // per row: definition level (nullable columns)
	dictPage    bool    // values are dictionary indexes in idx, else page positions
	idx         []int32 // per value: dictionary index, or start in src
	ends        []int32 // plain pages: per value, its end in src
	src         []byte  // plain pages: the page's value bytes
	row, val    int     // next row of the page to emit and its value
}

// readBytePages reads a string or binary chunk (the rows of ranges, or all
// n rows when ranges is nil) into Arrow offsets and data.
func readBytePages(ctx context.Context, fc *flatChunk, pr file.PageReader, chunkRows int64, ranges []rowRange, offsets, data *memory.Buffer) error {
	offsets.Resize((fc.n + 1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
	offs[0] = 0
	bp := &bytePages{pr: pr, nullable: fc.valid != nil, chunkRows: chunkRows, first: -1}
	if ranges == nil {
		ranges = []rowRange{{0, int64(fc.n)}}
	}
	out, end := 0, 0
	for _, r := range ranges {
		for row := r.start; row < r.end; {
			if err := ctx.Err(); err != nil {
				return err
			}
			if row < bp.first || row >= bp.first+bp.rows {
				if err := bp.pageFor(row); err != nil {
					return err
				}
			}
			take := int(min(r.end, bp.first+bp.rows) - row)
			var err error
			if end, err = bp.emit(fc, int(row-bp.first), take, out, offs, data, end); err != nil {
				return err
			}
			row += int64(take)
			out += take
		}
	}
	data.ResizeNoShrink(end)
	return nil
}

// pageFor makes the page holding row current: the next page when row
// follows the current one, else a seek (by the offset index when the file
// has one) and then forward.
func (bp *bytePages) pageFor(row int64) error {
	if !(bp.first < 0 && row == 0) && row != bp.first+bp.rows {
		if err := pageCall(func() error { return bp.pr.SeekToPageWithRow(row) }); err != nil {
			return err
		}
		if pg := bp.pr.Page(); pg != nil {
			if _, err := bp.load(pg); err != nil {
				return err
			}
		}
	}
	// Without an offset index arrow-go's seek stops at the page that ends
	// at row when row starts the next one.
	for bp.first < 0 || row >= bp.first+bp.rows {
		var next bool
		if err := pageCall(func() error { next = bp.pr.Next(); return nil }); err != nil {
			return err
		}
		if !next {
			if err := bp.pr.Err(); err != nil {
				return err
			}
			return fmt.Errorf("%w: chunk ends before row %d", io.ErrUnexpectedEOF, row)
		}
		if _, err := bp.load(bp.pr.Page()); err != nil {
			return err
		}
	}
	if row < bp.first {
		return fmt.Errorf("page of rows [%d, %d) does not hold row %d", bp.first, bp.first+bp.rows, row)
	}
	return nil
}

// load decodes pg's levels and value positions; it reports false for a
// page that holds no rows (the dictionary page, index pages).
func (bp *bytePages) load(pg file.Page) (bool, error) {
	var first int64
	var levels, values []byte
	nvals := int(pg.NumValues())
	switch p := pg.(type) {
	case *file.DictionaryPage:
		return false, bp.loadDict(p)
	case *file.DataPageV1:
		first, values = p.FirstRowIndex(), p.Data()
		if bp.nullable {
			if p.DefinitionLevelEncoding() != parquet.Encodings.RLE {
				return false, fmt.Errorf("definition levels encoded as %s", p.DefinitionLevelEncoding())
			}
			if len(values) < 4 {
				return false, errors.New("page too short for its definition levels")
			}
			n := int(binary.LittleEndian.Uint32(values))
			if n > len(values)-4 {
				return false, fmt.Errorf("definition levels of %d bytes in a page of %d", n, len(values))
			}
			levels, values = values[4:4+n], values[4+n:]
		}
	case *file.DataPageV2:
		first, values = p.FirstRowIndex(), p.Data()
		rl, dl := int(p.RepetitionLevelByteLen()), int(p.DefinitionLevelByteLen())
		if rl < 0 || dl < 0 || rl+dl > len(values) {
			return false, fmt.Errorf("levels of %d+%d bytes in a page of %d", rl, dl, len(values))
		}
		levels, values = values[rl:rl+dl], values[rl+dl:]
	default:
		return false, nil
	}
	if nvals < 0 || first < 0 || int64(nvals) > bp.chunkRows-first {
		return false, fmt.Errorf("page of %d values from row %d in a row group of %d", nvals, first, bp.chunkRows)
	}
	bp.first, bp.rows, bp.row, bp.val = first, int64(nvals), 0, 0
	nonNull := nvals
	if bp.nullable {
		bp.defs = grow(bp.defs, nvals)
		if err := decodeHybrid(levels, 1, bp.defs); err != nil {
			return false, fmt.Errorf("definition levels: %w", err)
		}
		nonNull = 0
		for _, d := range bp.defs {
			if d == 1 {
				nonNull++
			}
		}
	}
	bp.idx = grow(bp.idx, nonNull)
	switch enc := parquet.Encoding(pg.Encoding()); enc {
	case parquet.Encodings.Plain:
		bp.dictPage, bp.src = false, values
		bp.ends = grow(bp.ends, nonNull)
		pos := 0
		for j := range nonNull {
			if len(values)-pos < 4 {
				return false, fmt.Errorf("plain page ends at value %d of %d", j, nonNull)
			}
			n := int(binary.LittleEndian.Uint32(values[pos:]))
			pos += 4
			if n > len(values)-pos {
				return false, fmt.Errorf("value %d of %d bytes overruns its page", j, n)
			}
			bp.idx[j], bp.ends[j] = int32(pos), int32(pos+n)
			pos += n
		}
	case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
		if !bp.hasDict {
			// A seek lands past the dictionary page.
			var dp *file.DictionaryPage
			err := pageCall(func() (err error) { dp, err = bp.pr.GetDictionaryPage(); return err })
			if err != nil {
				return false, err
			}
			if dp == nil {
				return false, errors.New("dictionary-encoded page without a dictionary")
			}
			if err := bp.loadDict(dp); err != nil {
				return false, err
			}
		}
		bp.dictPage = true
		if nonNull == 0 {
			break
		}
		if len(values) == 0 {
			return false, errors.New("dictionary page without its index bit width")
		}
		bw := int(values[0])
		if bw > 32 {
			return false, fmt.Errorf("dictionary index bit width %d", bw)
		}
		if err := decodeHybrid(values[1:], bw, bp.idx); err != nil {
			return false, fmt.Errorf("dictionary indexes: %w", err)
		}
		size := uint32(len(bp.dictOffs) - 1)
		for _, v := range bp.idx {
			if uint32(v) >= size {
				return false, fmt.Errorf("dictionary index %d out of %d values", uint32(v), size)
			}
		}
	default:
		return false, fmt.Errorf("values encoded as %s", enc)
	}
	return true, nil
}

// loadDict indexes a plain dictionary page in place: its bytes stay in the
// page reader's dictionary buffer, which only a second dictionary page
// (refused) would overwrite before the reader is closed.
func (bp *bytePages) loadDict(p *file.DictionaryPage) error {
	if bp.hasDict {
		return errors.New("a second dictionary page in the chunk")
	}
	if enc := parquet.Encoding(p.Encoding()); enc != parquet.Encodings.Plain && enc != parquet.Encodings.PlainDict {
		return fmt.Errorf("dictionary encoded as %s", enc)
	}
	n, src := int(p.NumValues()), p.Data()
	if n < 0 || n > len(src)/4 {
		return fmt.Errorf("dictionary of %d values in %d bytes", n, len(src))
	}
	bp.dictOffs = make([]int32, n+1)
	pos := 0
	for i := range n {
		if len(src)-pos < 4 {
			return fmt.Errorf("dictionary ends at value %d of %d", i, n)
		}
		bp.dictOffs[i] = int32(pos)
		l := int(binary.LittleEndian.Uint32(src[pos:]))
		pos += 4
		if l > len(src)-pos {
			return fmt.Errorf("dictionary value %d of %d bytes overruns its page", i, l)
		}
		pos += l
	}
	bp.dictOffs[n] = int32(pos)
	bp.dictData = src
	bp.hasDict = true
	return nil
}

// emit appends take rows of the current page from page row at to output
// row out, whose values start at byte end of data; it returns the new end.
func (bp *bytePages) emit(fc *flatChunk, at, take, out int, offs []int32, data *memory.Buffer, end int) (int, error) {
	// Ranges ascend, so the page is read forward: skip to row at.
	if at < bp.row {
		return end, fmt.Errorf("page row %d read after row %d", at, bp.row)
	}
	if bp.nullable {
		for _, d := range bp.defs[bp.row:at] {
			if d == 1 {
				bp.val++
			}
		}
	} else {
		bp.val += at - bp.row
	}
	var valid []byte
	count := take
	if bp.nullable {
		valid = fc.valid.Bytes()
		count = 0
		for _, d := range bp.defs[at : at+take] {
			if d == 1 {
				count++
			}
		}
	}
	vals := bp.idx[bp.val : bp.val+count]
	size := 0
	if bp.dictPage {
		for _, v := range vals {
			size += int(bp.dictOffs[v+1] - bp.dictOffs[v] - 4)
		}
	} else {
		for j, s := range vals {
			size += int(bp.ends[bp.val+j] - s)
		}
	}
	if int64(end)+int64(size) > maxInt32 {
		return end, errors.New("string chunk over 2 GiB")
	}
	if end+size > data.Cap() {
		data.Reserve(max(2*data.Cap(), end+size))
	}
	data.ResizeNoShrink(end + size)
	buf := data.Bytes()
	j := 0
	for i := range take {
		if valid != nil {
			if bp.defs[at+i] != 1 {
				fc.nulls++
				offs[out+i+1] = int32(end)
				continue
			}
			bitutil.SetBit(valid, out+i)
		}
		if bp.dictPage {
			v := vals[j]
			end += copy(buf[end:], bp.dictData[bp.dictOffs[v]+4:bp.dictOffs[v+1]])
		} else {
			end += copy(buf[end:], bp.src[vals[j]:bp.ends[bp.val+j]])
		}
		j++
		offs[out+i+1] = int32(end)
	}
	bp.row, bp.val = at+take, bp.val+count
	return end, nil
}

// grow returns s resized to n, reusing its array when it is large enough.
func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// decodeHybrid decodes len(out) values of Parquet's RLE/bit-packed hybrid
// encoding of width bw from src.
func decodeHybrid(src []byte, bw int, out []int32) error {
	byteW := (bw + 7) / 8
	for i := 0; i < len(out); {
		h, n := binary.Uvarint(src)
		if n <= 0 {
			return fmt.Errorf("%w: run header at value %d of %d", io.ErrUnexpectedEOF, i, len(out))
		}
		src = src[n:]
		if h&1 == 0 {
			cnt := h >> 1
			if cnt == 0 {
				return fmt.Errorf("empty run at value %d", i)
			}
			if len(src) < byteW {
				return fmt.Errorf("%w: run value at value %d", io.ErrUnexpectedEOF, i)
			}
			var v uint32
			for k := range byteW {
				v |= uint32(src[k]) << (8 * k)
			}
			src = src[byteW:]
			m := int(min(cnt, uint64(len(out)-i)))
			fill := out[i : i+m]
			for k := range fill {
				fill[k] = int32(v)
			}
			i += m
			continue
		}
		groups := h >> 1
		if groups == 0 {
			return fmt.Errorf("empty bit-packed run at value %d", i)
		}
		// The last run may stop inside its last group: take what the
		// values need and what the page holds.
		m := int(min(groups*8, uint64(len(out)-i)))
		packed := src
		if groups <= uint64(len(src)) && int(groups)*bw < len(src) {
			packed = src[:int(groups)*bw]
		}
		if (m*bw+7)/8 > len(packed) {
			return fmt.Errorf("%w: bit-packed run at value %d", io.ErrUnexpectedEOF, i)
		}
		unpack(packed, bw, out[i:i+m])
		src = src[len(packed):]
		i += m
	}
	return nil
}

// unpack reads len(out) little-endian bit-packed values of width bw (at
// most 32) from packed.
func unpack(packed []byte, bw int, out []int32) {
	if bw == 0 {
		clear(out)
		return
	}
	mask := uint64(1)<<bw - 1
	for k := range out {
		bit := k * bw
		b := bit >> 3
		var w uint64
		if b+8 <= len(packed) {
			w = binary.LittleEndian.Uint64(packed[b:])
		} else {
			for s, c := range packed[b:] {
				w |= uint64(c) << (8 * s)
			}
		}
		out[k] = int32(w >> (bit & 7) & mask)
	}
}

// pageCall calls into arrow-go's page reader, which panics on some damaged
// page headers (a missing header struct, which no checksum catches on a
// partial read), and returns such a panic as an error. Only the reader's
// calls are guarded: a panic of the decoder itself stays a panic, which
// TestDecodeCorrupt catches.
func pageCall(f func() error) (err error) {
	defer recoverPage(&err)
	return f()
}

// recoverPage, deferred, turns a panic of arrow-go's page reader into *err.
func recoverPage(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("damaged page: %v", r)
	}
}
