package exec

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/vectorized"
)

// PRINTF(format, args...) formats as Java's String.format with Locale.US,
// which Flink calls: a NULL argument prints as "null"; a NULL format, and
// any format Java would throw on (a missing argument, a conversion that does
// not fit the argument's type), give NULL, as in Flink. The conversions are
// %s %S %d %x %X %o %f %e %E %b %B %c %n %% with an argument index (%2$s),
// the flags - 0 + and space, a width and a precision; others (%g, %t, the
// , ( and # flags) give NULL too.

// printfSpec is one conversion of a format.
type printfSpec struct {
	lit   string // text before the conversion
	arg   int    // 0-based argument, -1 for %n and %% and the trailing text
	flags string
	width string
	prec  string
	conv  byte
}

var printfConvs = "sSdxXofeEbBcn%"

// errPrintfLimit is a format past maxGeneratedChars: an error, as LPAD's,
// not the NULL of a format Java throws on, since Java would print it.
var errPrintfLimit = fmt.Errorf("%w: PRINTF width or precision over %d", vectorized.ErrInvalidValue, maxGeneratedChars)

// parsePrintf splits a Java format string into conversions.
func parsePrintf(f string) ([]printfSpec, error) {
	var specs []printfSpec
	next := 0 // the next ordinary argument
	var lit strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			lit.WriteByte(f[i])
			continue
		}
		j := i + 1
		sp := printfSpec{arg: -1}
		// An argument index n$.
		k := j
		for k < len(f) && f[k] >= '0' && f[k] <= '9' {
			k++
		}
		explicit := -1
		if k > j && k < len(f) && f[k] == '$' {
			n, _ := strconv.Atoi(f[j:k])
			if n < 1 {
				return nil, fmt.Errorf("%w: PRINTF format %q: argument index %d (indexes count from 1)", vectorized.ErrInvalidValue, f, n)
			}
			explicit, j = n-1, k+1
		}
		for j < len(f) && strings.IndexByte("-0+ ,(#", f[j]) >= 0 {
			if strings.IndexByte(",(#", f[j]) >= 0 {
				return nil, fmt.Errorf("%w: PRINTF format %q: the %q flag is not supported", vectorized.ErrInvalidValue, f, f[j])
			}
			sp.flags += string(f[j])
			j++
		}
		w := j
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		sp.width = f[w:j]
		if j < len(f) && f[j] == '.' {
			p := j + 1
			for j = p; j < len(f) && f[j] >= '0' && f[j] <= '9'; j++ {
			}
			sp.prec = "." + f[p:j]
		}
		if j >= len(f) {
			return nil, fmt.Errorf("%w: PRINTF format %q ends inside a conversion", vectorized.ErrInvalidValue, f)
		}
		// Go's fmt prints %!(NOVERB) past a width or precision of 1e6, and
		// each row would hold that many bytes: refuse, as LPAD does.
		if tooLong(sp.width) || tooLong(strings.TrimPrefix(sp.prec, ".")) {
			return nil, fmt.Errorf("%w: format %q", errPrintfLimit, f)
		}
		sp.conv = f[j]
		if strings.IndexByte(printfConvs, sp.conv) < 0 {
			return nil, fmt.Errorf("%w: PRINTF format %q: conversion %%%c is not supported", vectorized.ErrInvalidValue, f, sp.conv)
		}
		switch sp.conv {
		case 'n':
			lit.WriteByte('\n')
		case '%':
			lit.WriteByte('%')
		default:
			sp.lit = lit.String()
			lit.Reset()
			if explicit >= 0 {
				sp.arg = explicit
			} else {
				sp.arg = next
				next++
			}
			specs = append(specs, sp)
		}
		i = j
	}
	return append(specs, printfSpec{lit: lit.String(), arg: -1}), nil
}

// tooLong reports whether the digits n (a width or precision) exceed
// maxGeneratedChars.
func tooLong(n string) bool {
	v, err := strconv.Atoi(n)
	return n != "" && (err != nil || v > maxGeneratedChars)
}

// printfArg formats argument a at row i for one conversion. Integer
// arguments arrive as BIGINT; bits is their declared width.
func printfArg(sb *strings.Builder, sp printfSpec, a arrow.Array, bits, i int) error {
	goFmt := "%" + sp.flags + sp.width + sp.prec
	upper := sp.conv == 'S' || sp.conv == 'X' || sp.conv == 'E' || sp.conv == 'B'
	var out string
	switch sp.conv {
	case 'b', 'B':
		// Java: NULL is false, a boolean itself, anything else true.
		v := a.IsValid(i)
		if b, ok := a.(*array.Boolean); ok && v {
			v = b.Value(i)
		}
		out = fmt.Sprintf(goFmt+"s", strconv.FormatBool(v))
	case 's', 'S':
		s := "null"
		if a.IsValid(i) {
			s = vectorized.FormatValue(a, i)
		}
		out = fmt.Sprintf(goFmt+"s", s)
	default:
		if a.IsNull(i) {
			out = fmt.Sprintf("%"+strings.ReplaceAll(sp.flags, "0", "")+sp.width+"s", "null")
			break
		}
		var err error
		if out, err = printfNumber(goFmt, sp.conv, a, bits, i); err != nil {
			return err
		}
	}
	if upper {
		out = strings.ToUpper(out)
	}
	sb.WriteString(out)
	return nil
}

// printfNumber formats a number for %d %x %o %f %e %c, refusing what Java
// refuses (an IllegalFormatConversionException there).
func printfNumber(goFmt string, conv byte, a arrow.Array, bits, i int) (string, error) {
	t := a.DataType()
	switch conv {
	case 'd', 'x', 'X', 'o', 'c':
		if bits == 0 {
			return "", fmt.Errorf("%w: PRINTF %%%c needs an integer argument, not %s", vectorized.ErrInvalidValue, conv, t)
		}
		v := vectorized.Values[int64](a)[i]
		switch conv {
		case 'd':
			return fmt.Sprintf(goFmt+"d", v), nil
		case 'c':
			return fmt.Sprintf(goFmt+"c", rune(v)), nil
		}
		// Java prints a negative integer as its two's complement in the
		// argument's width.
		u := uint64(v)
		if bits < 64 && v < 0 {
			u &= 1<<bits - 1
		}
		return fmt.Sprintf(goFmt+string(conv|0x20), u), nil
	case 'f', 'e', 'E':
		var x any
		switch arr := a.(type) {
		case *array.Float32:
			x = float64(arr.Value(i))
		case *array.Float64:
			x = arr.Value(i)
		case *array.Decimal128:
			// Exact decimal digits, as Java's BigDecimal prints them.
			scale := int(arr.DataType().(*arrow.Decimal128Type).Scale)
			r, _ := new(big.Rat).SetString(arr.Value(i).ToString(int32(scale)))
			if conv == 'f' {
				prec := 6
				if p := strings.IndexByte(goFmt, '.'); p >= 0 {
					prec, _ = strconv.Atoi(goFmt[p+1:])
				}
				// Digits past the scale are zeros: FloatString would
				// compute them, in time growing faster than prec.
				s := r.FloatString(min(prec, max(scale, 0)))
				if pad := prec - max(scale, 0); pad > 0 {
					if !strings.Contains(s, ".") {
						s += "."
					}
					s += strings.Repeat("0", pad)
				}
				return fmt.Sprintf(strings.Split(goFmt, ".")[0]+"s", s), nil
			}
			x, _ = r.Float64()
		default:
			return "", fmt.Errorf("%w: PRINTF %%%c needs a floating-point or decimal argument, not %s", vectorized.ErrInvalidValue, conv, t)
		}
		return fmt.Sprintf(goFmt+string(conv|0x20), x), nil
	}
	return "", fmt.Errorf("%w: PRINTF conversion %%%c", vectorized.ErrInvalidValue, conv)
}

func resolvePrintf(types []arrow.DataType, _ []Expr) (*impl, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("needs a format")
	}
	if !vectorized.IsString(types[0]) && types[0].ID() != arrow.NULL {
		return nil, fmt.Errorf("argument 1 (the format) must be a string, not %s", types[0])
	}
	argTypes := append([]arrow.DataType{strType}, types[1:]...)
	bits := make([]int, len(types))
	for k, t := range types[1:] {
		if vectorized.IsInteger(t) {
			bits[k+1], argTypes[k+1] = t.(arrow.FixedWidthDataType).BitWidth(), i64Type
		}
	}
	return &impl{ret: strType, args: argTypes, fn: func(_ context.Context, ec *Context, a []arrow.Array, n int) (arrow.Array, error) {
		parsed := map[string][]printfSpec{}
		var sb strings.Builder
		return mapNullableStrings(ec, a, n, true, func(i int) (string, bool, error) {
			if a[0].IsNull(i) {
				return "", false, nil
			}
			f := vectorized.StringAt(a[0], i)
			specs, ok := parsed[f]
			if !ok {
				var err error
				if specs, err = parsePrintf(f); errors.Is(err, errPrintfLimit) {
					return "", false, err
				} else if err != nil {
					return "", false, nil
				}
				parsed[f] = specs
			}
			sb.Reset()
			for _, sp := range specs {
				sb.WriteString(sp.lit)
				if sp.arg < 0 {
					continue
				}
				if sp.arg >= len(a)-1 || printfArg(&sb, sp, a[sp.arg+1], bits[sp.arg+1], i) != nil {
					return "", false, nil
				}
				// Checked as it grows: a format may name one long
				// argument any number of times ('%1$s%1$s...').
				if err := vectorized.CheckComputedString("PRINTF", int64(sb.Len())); err != nil {
					return "", false, err
				}
			}
			return sb.String(), true, nil
		})
	}}, nil
}
