package tablestore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// byteValues decodes the values of a BYTE_ARRAY chunk's pages into Arrow
// offsets and data. arrow-go's reader hands out one []byte header per value
// and grows its decoded dictionary by appending such headers (pointers the
// GC scans and write barriers), which was most of an uncached scan of a
// nearly unique string column; here the dictionary page is indexed in
// place and values are copied from it or from the page by position.
type byteValues struct {
	dictOffs []int32 // dictionary value i is dictData[dictOffs[i]+4:dictOffs[i+1]] (after its length)
	dictData []byte
	haveDict bool

	dictPage bool    // the page's values are dictionary indexes in idx, else page positions
	idx      []int32 // per value: dictionary index, or start in src
	ends     []int32 // plain pages: per value, its end in src
	src      []byte  // plain pages: the page's value bytes

	offs []int32        // output offsets, one past each row
	data *memory.Buffer // output values
	end  int            // bytes of data written
}

// readBytePages reads a string or binary chunk (the rows of ranges, or all
// n rows when ranges is nil) into Arrow offsets and data.
func readBytePages(ctx context.Context, fc *flatChunk, pr file.PageReader, chunkRows int64, ranges []rowRange, offsets, data *memory.Buffer) error {
	offsets.Resize((fc.n + 1) * 4)
	bv := &byteValues{offs: arrow.Int32Traits.CastFromBytes(offsets.Bytes()), data: data}
	bv.offs[0] = 0
	if err := readPages(ctx, fc, newPageCursor(pr, fc, chunkRows, bv), ranges); err != nil {
		return err
	}
	data.ResizeNoShrink(bv.end)
	return nil
}

func (bv *byteValues) hasDict() bool { return bv.haveDict }

func (bv *byteValues) page(enc parquet.Encoding, values []byte, n int) error {
	bv.idx = grow(bv.idx, n)
	switch enc {
	case parquet.Encodings.Plain:
		bv.dictPage, bv.src = false, values
		bv.ends = grow(bv.ends, n)
		pos := 0
		for j := range n {
			if len(values)-pos < 4 {
				return fmt.Errorf("plain page ends at value %d of %d", j, n)
			}
			l := int(binary.LittleEndian.Uint32(values[pos:]))
			pos += 4
			if l > len(values)-pos {
				return fmt.Errorf("value %d of %d bytes overruns its page", j, l)
			}
			bv.idx[j], bv.ends[j] = int32(pos), int32(pos+l)
			pos += l
		}
		return nil
	case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
		bv.dictPage = true
		return dictIndexes(values, bv.idx, len(bv.dictOffs)-1)
	}
	return fmt.Errorf("values encoded as %s", enc)
}

// dict indexes a plain dictionary page in place: its bytes stay in the
// page reader's dictionary buffer, which only a second dictionary page
// (refused) would overwrite before the reader is closed.
func (bv *byteValues) dict(p *file.DictionaryPage) error {
	n, src := int(p.NumValues()), p.Data()
	if n < 0 || n > len(src)/4 {
		return fmt.Errorf("dictionary of %d values in %d bytes", n, len(src))
	}
	bv.dictOffs = make([]int32, n+1)
	pos := 0
	for i := range n {
		if len(src)-pos < 4 {
			return fmt.Errorf("dictionary ends at value %d of %d", i, n)
		}
		bv.dictOffs[i] = int32(pos)
		l := int(binary.LittleEndian.Uint32(src[pos:]))
		pos += 4
		if l > len(src)-pos {
			return fmt.Errorf("dictionary value %d of %d bytes overruns its page", i, l)
		}
		pos += l
	}
	bv.dictOffs[n] = int32(pos)
	bv.dictData = src
	bv.haveDict = true
	return nil
}

func (bv *byteValues) emit(out, take, val, count int, valid []byte, off int) error {
	vals := bv.idx[val : val+count]
	size := 0
	if bv.dictPage {
		for _, v := range vals {
			size += int(bv.dictOffs[v+1] - bv.dictOffs[v] - 4)
		}
	} else {
		for j, s := range vals {
			size += int(bv.ends[val+j] - s)
		}
	}
	end := bv.end
	if int64(end)+int64(size) > maxInt32 {
		return errors.New("string chunk over 2 GiB")
	}
	if end+size > bv.data.Cap() {
		bv.data.Reserve(max(2*bv.data.Cap(), end+size))
	}
	bv.data.ResizeNoShrink(end + size)
	buf := bv.data.Bytes()
	j := 0
	for i := range take {
		if valid != nil && !bitutil.BitIsSet(valid, off+i) {
			bv.offs[out+i+1] = int32(end)
			continue
		}
		if bv.dictPage {
			v := vals[j]
			end += copy(buf[end:], bv.dictData[bv.dictOffs[v]+4:bv.dictOffs[v+1]])
		} else {
			end += copy(buf[end:], bv.src[vals[j]:bv.ends[val+j]])
		}
		j++
		bv.offs[out+i+1] = int32(end)
	}
	bv.end = end
	return nil
}
