package tablestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// pageDecodable reports whether readPages can decode a flat chunk: plain
// or dictionary values with RLE levels, which is what flightd writes.
// Other writers' encodings (DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT, ...) go
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

// pageValues decodes the values of one flat chunk's pages (byteValues,
// fixedValues) as a pageCursor walks them.
type pageValues interface {
	// dict takes the chunk's dictionary page.
	dict(p *file.DictionaryPage) error
	hasDict() bool
	// page takes a data page's encoded values, n of them (its rows with
	// a value).
	page(enc parquet.Encoding, values []byte, n int) error
	// emit writes output rows [out, out+take) from the page's values
	// [val, val+count); valid, nil when every row has a value, has a set
	// bit from bit off on for each row with a value.
	emit(out, take, val, count int, valid []byte, off int) error
}

// pageCursor walks the data pages of a flat chunk, decoding each page's
// definition levels and handing its values to vals, so that values are
// copied once, from the decompressed page to the Arrow buffer (arrow-go's
// column reader decodes levels a value at a time and copies the values
// through its own buffers).
type pageCursor struct {
	pr        file.PageReader
	nullable  bool
	chunkRows int64 // rows of the row group: bounds a page's (damaged headers)
	vals      pageValues

	// The current data page: rows [first, first+rows) of the chunk.
	first, rows int64
	dense       bool   // every row of the page has a value
	valid       []byte // when not dense: a bit per row, set for a value
	row, val    int    // next row of the page to emit and its value
}

func newPageCursor(pr file.PageReader, fc *flatChunk, chunkRows int64, vals pageValues) *pageCursor {
	return &pageCursor{pr: pr, nullable: fc.valid != nil, chunkRows: chunkRows, vals: vals, first: -1}
}

// readPages reads the rows of ranges (all fc.n rows when nil) of a chunk
// through pc into fc's validity and pc's values.
func readPages(ctx context.Context, fc *flatChunk, pc *pageCursor, ranges []rowRange) error {
	if ranges == nil {
		ranges = []rowRange{{0, int64(fc.n)}}
	}
	out := 0
	for _, r := range ranges {
		for row := r.start; row < r.end; {
			if err := ctx.Err(); err != nil {
				return err
			}
			if row < pc.first || row >= pc.first+pc.rows {
				if err := pc.pageFor(row); err != nil {
					return err
				}
			}
			take := int(min(r.end, pc.first+pc.rows) - row)
			if err := pc.emit(fc, int(row-pc.first), take, out); err != nil {
				return err
			}
			row += int64(take)
			out += take
		}
	}
	return nil
}

// pageFor makes the page holding row current: the next page when row
// follows the current one, else a seek (by the offset index when the file
// has one) and then forward.
func (pc *pageCursor) pageFor(row int64) error {
	if !(pc.first < 0 && row == 0) && row != pc.first+pc.rows {
		if err := pageCall(func() error { return pc.pr.SeekToPageWithRow(row) }); err != nil {
			return err
		}
		if pg := pc.pr.Page(); pg != nil {
			if _, err := pc.load(pg); err != nil {
				return err
			}
		}
	}
	// Without an offset index arrow-go's seek stops at the page that ends
	// at row when row starts the next one.
	for pc.first < 0 || row >= pc.first+pc.rows {
		var next bool
		if err := pageCall(func() error { next = pc.pr.Next(); return nil }); err != nil {
			return err
		}
		if !next {
			if err := pc.pr.Err(); err != nil {
				return err
			}
			return fmt.Errorf("%w: chunk ends before row %d", io.ErrUnexpectedEOF, row)
		}
		if _, err := pc.load(pc.pr.Page()); err != nil {
			return err
		}
	}
	if row < pc.first {
		return fmt.Errorf("page of rows [%d, %d) does not hold row %d", pc.first, pc.first+pc.rows, row)
	}
	return nil
}

// load decodes pg's levels and hands its values to pc.vals; it reports
// false for a page that holds no rows (the dictionary page, index pages).
func (pc *pageCursor) load(pg file.Page) (bool, error) {
	var first int64
	var levels, values []byte
	nvals := int(pg.NumValues())
	switch p := pg.(type) {
	case *file.DictionaryPage:
		return false, pc.dict(p)
	case *file.DataPageV1:
		first, values = p.FirstRowIndex(), p.Data()
		if pc.nullable {
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
	if nvals < 0 || first < 0 || int64(nvals) > pc.chunkRows-first {
		return false, fmt.Errorf("page of %d values from row %d in a row group of %d", nvals, first, pc.chunkRows)
	}
	pc.first, pc.rows, pc.row, pc.val = first, int64(nvals), 0, 0
	nonNull := nvals
	pc.dense = !pc.nullable || allDefined(levels, nvals)
	if !pc.dense {
		size := int(bitutil.BytesForBits(int64(nvals)))
		pc.valid = slices.Grow(pc.valid[:0], size)[:size]
		if err := decodeLevelBits(levels, nvals, pc.valid); err != nil {
			return false, fmt.Errorf("definition levels: %w", err)
		}
		nonNull = bitutil.CountSetBits(pc.valid, 0, nvals)
	}
	enc := parquet.Encoding(pg.Encoding())
	if (enc == parquet.Encodings.PlainDict || enc == parquet.Encodings.RLEDict) && !pc.vals.hasDict() {
		// A seek lands past the dictionary page.
		var dp *file.DictionaryPage
		err := pageCall(func() (err error) { dp, err = pc.pr.GetDictionaryPage(); return err })
		if err != nil {
			return false, err
		}
		if dp == nil {
			return false, errors.New("dictionary-encoded page without a dictionary")
		}
		if err := pc.dict(dp); err != nil {
			return false, err
		}
	}
	return true, pc.vals.page(enc, values, nonNull)
}

// dict hands the chunk's only dictionary page to pc.vals, which may keep
// its bytes: they stay in the page reader's dictionary buffer, which only
// a second dictionary page (refused) would overwrite before the reader is
// closed.
func (pc *pageCursor) dict(p *file.DictionaryPage) error {
	if pc.vals.hasDict() {
		return errors.New("a second dictionary page in the chunk")
	}
	if enc := parquet.Encoding(p.Encoding()); enc != parquet.Encodings.Plain && enc != parquet.Encodings.PlainDict {
		return fmt.Errorf("dictionary encoded as %s", enc)
	}
	return pc.vals.dict(p)
}

// emit writes take rows of the current page from page row at to output
// row out: their validity into fc and their values through pc.vals.
func (pc *pageCursor) emit(fc *flatChunk, at, take, out int) error {
	// Ranges ascend, so the page is read forward: skip to row at.
	if at < pc.row {
		return fmt.Errorf("page row %d read after row %d", at, pc.row)
	}
	var valid []byte
	count := take
	if pc.dense {
		pc.val += at - pc.row
		if fc.valid != nil {
			bitutil.SetBitsTo(fc.valid.Bytes(), int64(out), int64(take), true)
		}
	} else {
		pc.val += bitutil.CountSetBits(pc.valid, pc.row, at-pc.row)
		valid = pc.valid
		count = bitutil.CountSetBits(valid, at, take)
		bitutil.CopyBitmap(valid, at, take, fc.valid.Bytes(), out)
		fc.nulls += take - count
	}
	if err := pc.vals.emit(out, take, pc.val, count, valid, at); err != nil {
		return err
	}
	pc.row, pc.val = at+take, pc.val+count
	return nil
}

// allDefined reports whether RLE/bit-packed definition levels of width 1
// start with a run of at least n ones: every row of the page has a value,
// the common case, which then needs no level per row.
func allDefined(levels []byte, n int) bool {
	h, k := binary.Uvarint(levels)
	return k > 0 && h&1 == 0 && h>>1 >= uint64(n) && len(levels) > k && levels[k] == 1
}

// decodeLevelBits decodes n definition levels of width 1 (RLE/bit-packed
// hybrid) into a bit per row, set for level 1: bit-packed runs hold the
// bits in Arrow's order already, so levels cost no work per row.
func decodeLevelBits(src []byte, n int, bits []byte) error {
	for i := 0; i < n; {
		h, k := binary.Uvarint(src)
		if k <= 0 {
			return fmt.Errorf("%w: run header at level %d of %d", io.ErrUnexpectedEOF, i, n)
		}
		src = src[k:]
		if h&1 == 0 {
			cnt := h >> 1
			if cnt == 0 {
				return fmt.Errorf("empty run at level %d", i)
			}
			if len(src) < 1 {
				return fmt.Errorf("%w: run value at level %d", io.ErrUnexpectedEOF, i)
			}
			m := int(min(cnt, uint64(n-i)))
			bitutil.SetBitsTo(bits, int64(i), int64(m), src[0] == 1)
			src = src[1:]
			i += m
			continue
		}
		groups := h >> 1
		if groups == 0 {
			return fmt.Errorf("empty bit-packed run at level %d", i)
		}
		// The last run may stop inside its last group: take what the
		// levels need and what the page holds.
		m := int(min(groups*8, uint64(n-i)))
		if (m+7)/8 > len(src) {
			return fmt.Errorf("%w: bit-packed run at level %d", io.ErrUnexpectedEOF, i)
		}
		bitutil.CopyBitmap(src, 0, m, bits, i)
		src = src[min(groups, uint64(len(src))):]
		i += m
	}
	return nil
}

// dictIndexes decodes a dictionary-encoded page's values (a bit width,
// then the RLE/bit-packed hybrid) into idx, each checked against the
// dictionary's size.
func dictIndexes(values []byte, idx []int32, size int) error {
	if len(idx) == 0 {
		return nil
	}
	if len(values) == 0 {
		return errors.New("dictionary page without its index bit width")
	}
	bw := int(values[0])
	if bw > 32 {
		return fmt.Errorf("dictionary index bit width %d", bw)
	}
	if err := decodeHybrid(values[1:], bw, idx); err != nil {
		return fmt.Errorf("dictionary indexes: %w", err)
	}
	for _, v := range idx {
		if uint32(v) >= uint32(size) {
			return fmt.Errorf("dictionary index %d out of %d values", uint32(v), size)
		}
	}
	return nil
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
