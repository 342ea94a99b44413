package tablestore

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
)

// fixedValues decodes the values of an INT32, INT64, FLOAT or DOUBLE
// chunk's pages into an Arrow value buffer: plain pages are copied as they
// are (one copy per page when it has no NULL), or widened to DECIMAL128
// for decimals stored as integers.
type fixedValues struct {
	width int    // bytes of a stored value: 4 or 8
	wide  bool   // out holds DECIMAL128s made from the stored integers
	out   []byte // the output values, a slot per output row

	dictData []byte // the dictionary's values, width bytes each
	dictN    int
	haveDict bool

	dictPage bool    // the page's values are dictionary indexes in idx
	idx      []int32 // dictionary pages: per value, its dictionary index
	src      []byte  // plain pages: the page's values
}

func (fv *fixedValues) hasDict() bool { return fv.haveDict }

func (fv *fixedValues) dict(p *file.DictionaryPage) error {
	n, src := int(p.NumValues()), p.Data()
	if n < 0 || n > len(src)/fv.width {
		return fmt.Errorf("dictionary of %d values of %d bytes in %d bytes", n, fv.width, len(src))
	}
	fv.dictData, fv.dictN, fv.haveDict = src, n, true
	return nil
}

func (fv *fixedValues) page(enc parquet.Encoding, values []byte, n int) error {
	switch enc {
	case parquet.Encodings.Plain:
		if len(values)/fv.width < n {
			return fmt.Errorf("plain page of %d bytes for %d values of %d bytes", len(values), n, fv.width)
		}
		fv.dictPage, fv.src = false, values
		return nil
	case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
		fv.dictPage = true
		fv.idx = grow(fv.idx, n)
		return dictIndexes(values, fv.idx, fv.dictN)
	}
	return fmt.Errorf("values encoded as %s", enc)
}

// value returns the stored bytes of the page's value j.
func (fv *fixedValues) value(j int) []byte {
	if fv.dictPage {
		at := int(fv.idx[j]) * fv.width
		return fv.dictData[at : at+fv.width]
	}
	return fv.src[j*fv.width : (j+1)*fv.width]
}

// integer returns the page's value j as a signed integer.
func (fv *fixedValues) integer(j int) int64 {
	if fv.width == 4 {
		return int64(int32(binary.LittleEndian.Uint32(fv.value(j))))
	}
	return int64(binary.LittleEndian.Uint64(fv.value(j)))
}

func (fv *fixedValues) emit(out, take, val, count int, valid []byte, off int) error {
	if fv.wide {
		nums := arrow.Decimal128Traits.CastFromBytes(fv.out)[out : out+take]
		j := val
		if !fv.dictPage && fv.width == 4 {
			// DECIMAL(p<=9), most of TPC-DS's amounts: no call per value.
			src := fv.src
			for i := range nums {
				if valid != nil && !bitutil.BitIsSet(valid, off+i) {
					nums[i] = decimal128.Num{}
					continue
				}
				nums[i] = decimal128.FromI64(int64(int32(binary.LittleEndian.Uint32(src[4*j:]))))
				j++
			}
			return nil
		}
		for i := range nums {
			if valid != nil && !bitutil.BitIsSet(valid, off+i) {
				nums[i] = decimal128.Num{}
				continue
			}
			nums[i] = decimal128.FromI64(fv.integer(j))
			j++
		}
		return nil
	}
	w := fv.width
	dst := fv.out[out*w : (out+take)*w]
	if valid == nil && !fv.dictPage {
		copy(dst, fv.src[val*w:(val+take)*w])
		return nil
	}
	if !fv.dictPage {
		// Copy each run of rows with values whole.
		src, j := fv.src, val
		for i := 0; i < take; {
			if !bitutil.BitIsSet(valid, off+i) {
				clear(dst[i*w : (i+1)*w])
				i++
				continue
			}
			k := i + 1
			for k < take && bitutil.BitIsSet(valid, off+k) {
				k++
			}
			j += copy(dst[i*w:k*w], src[j*w:(j+k-i)*w]) / w
			i = k
		}
		return nil
	}
	j := val
	for i := range take {
		slot := dst[i*w : (i+1)*w]
		if valid != nil && !bitutil.BitIsSet(valid, off+i) {
			clear(slot)
			continue
		}
		if w == 4 {
			binary.LittleEndian.PutUint32(slot, binary.LittleEndian.Uint32(fv.value(j)))
		} else {
			binary.LittleEndian.PutUint64(slot, binary.LittleEndian.Uint64(fv.value(j)))
		}
		j++
	}
	return nil
}
