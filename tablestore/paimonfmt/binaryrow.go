package paimonfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
)

// Kind is a field type as BinaryRow lays it out.
type Kind int

// The kinds BinaryRow encodes. Values (see EncodeRow) are: nil for NULL;
// bool for Boolean; int64 for the integer kinds, Date (days since the
// epoch) and Time (milliseconds of the day); float64 for Float and
// Double; string for String; []byte for Bytes; Timestamp for Timestamp;
// *big.Int (the unscaled value) for Decimal.
const (
	Boolean Kind = iota
	TinyInt
	SmallInt
	Int
	BigInt
	Float
	Double
	Date
	Time
	Timestamp
	Decimal
	String
	Bytes
)

// Type is a field's kind with the precision that decides the layout of
// timestamps and decimals.
type Type struct {
	Kind      Kind
	Precision int
}

// TimestampValue is Paimon's timestamp: milliseconds since the epoch and
// the nanoseconds within that millisecond.
type TimestampValue struct {
	Millis      int64
	NanoOfMilli int32
}

// compactTimestamp and compactDecimal: precisions Paimon stores in the
// fixed part.
const (
	compactTimestamp = 3
	compactDecimal   = 18
	headerBits       = 8 // the row kind byte before the null bits
)

func nullBitsBytes(arity int) int { return ((arity + 63 + headerBits) / 64) * 8 }

// EncodeRow serializes vals as Paimon serializes a BinaryRow into
// manifests: the arity as a big-endian int32, then the row (row kind
// INSERT).
func EncodeRow(types []Type, vals []any) ([]byte, error) {
	row, err := encodeRow(types, vals)
	if err != nil {
		return nil, err
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(row)), uint32(len(types)))
	return append(out, row...), nil
}

// encodeRow is the row itself, the bytes BinaryRow.hashCode hashes.
func encodeRow(types []Type, vals []any) ([]byte, error) {
	if len(types) != len(vals) {
		return nil, fmt.Errorf("binary row: %d types, %d values", len(types), len(vals))
	}
	nb := nullBitsBytes(len(types))
	fixed := nb + 8*len(types)
	buf := make([]byte, fixed)
	for i, t := range types {
		off := nb + 8*i
		v := vals[i]
		if v == nil {
			bit := i + headerBits
			buf[bit/8] |= 1 << (bit % 8)
			continue
		}
		slot := buf[off : off+8]
		bad := func() error { return fmt.Errorf("binary row: field %d: value %T does not fit kind %d", i, v, t.Kind) }
		switch t.Kind {
		case Boolean:
			b, ok := v.(bool)
			if !ok {
				return nil, bad()
			}
			if b {
				slot[0] = 1
			}
		case TinyInt, SmallInt, Int, BigInt, Date, Time:
			n, ok := v.(int64)
			if !ok {
				return nil, bad()
			}
			switch t.Kind {
			case TinyInt:
				slot[0] = byte(n)
			case SmallInt:
				binary.LittleEndian.PutUint16(slot, uint16(n))
			case BigInt:
				binary.LittleEndian.PutUint64(slot, uint64(n))
			default:
				binary.LittleEndian.PutUint32(slot, uint32(n))
			}
		case Float:
			f, ok := v.(float64)
			if !ok {
				return nil, bad()
			}
			binary.LittleEndian.PutUint32(slot, math.Float32bits(float32(f)))
		case Double:
			f, ok := v.(float64)
			if !ok {
				return nil, bad()
			}
			binary.LittleEndian.PutUint64(slot, math.Float64bits(f))
		case Timestamp:
			ts, ok := v.(TimestampValue)
			if !ok {
				return nil, bad()
			}
			if t.Precision <= compactTimestamp {
				binary.LittleEndian.PutUint64(slot, uint64(ts.Millis))
				continue
			}
			binary.LittleEndian.PutUint64(slot, uint64(len(buf))<<32|uint64(uint32(ts.NanoOfMilli)))
			buf = binary.LittleEndian.AppendUint64(buf, uint64(ts.Millis))
		case Decimal:
			d, ok := v.(*big.Int)
			if !ok {
				return nil, bad()
			}
			if t.Precision <= compactDecimal {
				if !d.IsInt64() {
					return nil, fmt.Errorf("binary row: field %d: decimal %s exceeds precision %d", i, d, t.Precision)
				}
				binary.LittleEndian.PutUint64(slot, uint64(d.Int64()))
				continue
			}
			b := twosComplement(d)
			if len(b) > 16 {
				return nil, fmt.Errorf("binary row: field %d: decimal %s exceeds 16 bytes", i, d)
			}
			binary.LittleEndian.PutUint64(slot, uint64(len(buf))<<32|uint64(len(b)))
			buf = append(buf, b...)
			buf = append(buf, make([]byte, 16-len(b))...)
		case String, Bytes:
			var b []byte
			switch s := v.(type) {
			case string:
				b = []byte(s)
			case []byte:
				b = s
			default:
				return nil, bad()
			}
			if len(b) <= 7 { // inline: the length in the top byte, marked
				copy(slot, b)
				slot[7] = 0x80 | byte(len(b))
				continue
			}
			binary.LittleEndian.PutUint64(slot, uint64(len(buf))<<32|uint64(len(b)))
			buf = append(buf, b...)
			buf = append(buf, make([]byte, (8-len(b)%8)%8)...)
		default:
			return nil, fmt.Errorf("binary row: field %d: unknown kind %d", i, t.Kind)
		}
	}
	return buf, nil
}

// twosComplement is Java's BigInteger.toByteArray: big-endian, minimal.
func twosComplement(d *big.Int) []byte {
	if d.Sign() >= 0 {
		b := d.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -d - 1 in bytes, inverted.
	m := new(big.Int).Neg(d)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	if len(b) == 0 || b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	for i := range b {
		b[i] = ^b[i]
	}
	return b
}

func fromTwosComplement(b []byte) *big.Int {
	d := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		d.Sub(d, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return d
}

var errShort = errors.New("binary row: truncated")

// DecodeRow reads what EncodeRow writes (also as Paimon's writers write
// it). A row with fewer fields than types (a partition or statistics row
// of an older schema) is an error: the caller knows the arity.
func DecodeRow(data []byte, types []Type) ([]any, error) {
	if len(data) < 4 {
		return nil, errShort
	}
	arity := int(int32(binary.BigEndian.Uint32(data)))
	if arity != len(types) {
		return nil, fmt.Errorf("binary row: arity %d, expected %d", arity, len(types))
	}
	row := data[4:]
	nb := nullBitsBytes(arity)
	if len(row) < nb+8*arity {
		return nil, errShort
	}
	vals := make([]any, arity)
	for i, t := range types {
		bit := i + headerBits
		if row[bit/8]&(1<<(bit%8)) != 0 {
			continue
		}
		slot := row[nb+8*i : nb+8*i+8]
		word := binary.LittleEndian.Uint64(slot)
		varPart := func(n int) ([]byte, error) {
			off := int(word >> 32)
			if off < 0 || n < 0 || off+n > len(row) {
				return nil, fmt.Errorf("binary row: field %d: offset %d length %d beyond %d bytes", i, off, n, len(row))
			}
			return row[off : off+n], nil
		}
		switch t.Kind {
		case Boolean:
			vals[i] = slot[0] != 0
		case TinyInt:
			vals[i] = int64(int8(slot[0]))
		case SmallInt:
			vals[i] = int64(int16(binary.LittleEndian.Uint16(slot)))
		case Int, Date, Time:
			vals[i] = int64(int32(binary.LittleEndian.Uint32(slot)))
		case BigInt:
			vals[i] = int64(word)
		case Float:
			vals[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(slot)))
		case Double:
			vals[i] = math.Float64frombits(word)
		case Timestamp:
			if t.Precision <= compactTimestamp {
				vals[i] = TimestampValue{Millis: int64(word)}
				continue
			}
			b, err := varPart(8)
			if err != nil {
				return nil, err
			}
			vals[i] = TimestampValue{Millis: int64(binary.LittleEndian.Uint64(b)), NanoOfMilli: int32(uint32(word))}
		case Decimal:
			if t.Precision <= compactDecimal {
				vals[i] = big.NewInt(int64(word))
				continue
			}
			b, err := varPart(int(uint32(word)))
			if err != nil {
				return nil, err
			}
			vals[i] = fromTwosComplement(b)
		case String, Bytes:
			var b []byte
			if slot[7]&0x80 != 0 {
				n := int(slot[7] & 0x7f)
				if n > 7 {
					return nil, fmt.Errorf("binary row: field %d: inline length %d", i, n)
				}
				b = slot[:n]
			} else {
				var err error
				if b, err = varPart(int(uint32(word))); err != nil {
					return nil, err
				}
			}
			if t.Kind == String {
				vals[i] = string(b)
			} else {
				vals[i] = append([]byte(nil), b...)
			}
		default:
			return nil, fmt.Errorf("binary row: field %d: unknown kind %d", i, t.Kind)
		}
	}
	return vals, nil
}

// Arity reads the field count of a serialized row.
func Arity(data []byte) (int, error) {
	if len(data) < 4 {
		return 0, errShort
	}
	return int(int32(binary.BigEndian.Uint32(data))), nil
}
