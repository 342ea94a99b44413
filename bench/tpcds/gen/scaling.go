package gen

import (
	"fmt"
	"math"
)

// definedScales are the scale factors the specification lists row counts for.
var definedScales = [...]float64{0, 1, 10, 100, 300, 1000, 3000, 10000, 30000, 100000}

type scaleModel int

const (
	static scaleModel = iota
	linear
	logarithmic
)

// scaling is dsdgen's per-table scaling rule: counts at definedScales times
// 10^mult, doubled for tables that keep history (slowly changing dimensions
// hold up to three versions of a business key).
type scaling struct {
	mult    int
	model   scaleModel
	counts  [10]int64
	history bool
}

// dimScaling holds the specification's scaling tables for the dimensions.
// Facts are counted in lines (factLines); inventory is derived.
var dimScaling = map[string]scaling{
	"call_center":            {0, logarithmic, [10]int64{0, 3, 12, 15, 18, 21, 24, 27, 30, 30}, true},
	"catalog_page":           {0, static, [10]int64{0, 11718, 12000, 20400, 26000, 30000, 36000, 40000, 46000, 50000}, false},
	"customer":               {3, logarithmic, [10]int64{0, 100, 500, 2000, 5000, 12000, 30000, 65000, 80000, 100000}, false},
	"customer_address":       {3, logarithmic, [10]int64{0, 50, 250, 1000, 2500, 6000, 15000, 32500, 40000, 50000}, false},
	"customer_demographics":  {2, static, [10]int64{0, 19208, 19208, 19208, 19208, 19208, 19208, 19208, 19208, 19208}, false},
	"date_dim":               {0, static, [10]int64{0, 73049, 73049, 73049, 73049, 73049, 73049, 73049, 73049, 73049}, false},
	"household_demographics": {0, static, [10]int64{0, 7200, 7200, 7200, 7200, 7200, 7200, 7200, 7200, 7200}, false},
	"income_band":            {0, static, [10]int64{0, 20, 20, 20, 20, 20, 20, 20, 20, 20}, false},
	"item":                   {3, logarithmic, [10]int64{0, 9, 51, 102, 132, 150, 180, 201, 231, 251}, true},
	"promotion":              {0, logarithmic, [10]int64{0, 300, 500, 1000, 1300, 1500, 1800, 2000, 2300, 2500}, false},
	"reason":                 {0, logarithmic, [10]int64{0, 75, 75, 75, 75, 75, 75, 75, 75, 75}, false},
	"ship_mode":              {0, static, [10]int64{0, 20, 20, 20, 20, 20, 20, 20, 20, 20}, false},
	"store":                  {0, logarithmic, [10]int64{0, 6, 51, 201, 402, 501, 675, 750, 852, 951}, true},
	"time_dim":               {0, static, [10]int64{0, 86400, 86400, 86400, 86400, 86400, 86400, 86400, 86400, 86400}, false},
	"warehouse":              {0, logarithmic, [10]int64{0, 5, 10, 15, 17, 20, 22, 25, 27, 30}, false},
	"web_page":               {0, logarithmic, [10]int64{0, 30, 100, 1020, 1302, 1500, 1800, 2001, 2301, 2502}, true},
	"web_site":               {0, logarithmic, [10]int64{0, 15, 21, 12, 21, 27, 33, 39, 42, 48}, true},
}

// keepSF1BelowOne lists the tiny fixed-content dimensions that keep their
// SF1 size below SF1 (see the package documentation).
var keepSF1BelowOne = map[string]bool{
	"call_center": true, "promotion": true, "reason": true, "store": true,
	"warehouse": true, "web_page": true, "web_site": true,
}

// factLines holds the published line counts of the fact tables at the scale
// factors where the specification (and dsdgen) state them exactly; other
// scale factors compose them linearly as dsdgen does.
var factLines = map[string]map[float64]int64{
	"store_sales":     {1: 2880404, 10: 28800991, 100: 287997024, 1000: 2879987999},
	"catalog_sales":   {1: 1441548, 10: 14401261, 100: 143997065, 1000: 1439980416},
	"web_sales":       {1: 719384, 10: 7197566, 100: 72001237, 1000: 720000376},
	"store_returns":   {1: 287514, 10: 2875432, 100: 28795080, 1000: 287999764},
	"catalog_returns": {1: 144067, 10: 1439749, 100: 14404374, 1000: 143996756},
	"web_returns":     {1: 71763, 10: 719217, 100: 7197670, 1000: 71997522},
}

// inventoryWeeks is the number of weekly inventory snapshots: the weeks of
// the five sales years 1998-01-01 .. 2002-12-31 (dsdgen's count).
const inventoryWeeks = 261

// MinScale and MaxScale bound the accepted scale factors.
const (
	MinScale = 0.001
	MaxScale = 100000
)

func checkScale(sf float64) error {
	if math.IsNaN(sf) || sf < MinScale || sf > MaxScale {
		return fmt.Errorf("scale factor %v out of range [%v, %v]", sf, MinScale, MaxScale)
	}
	return nil
}

// dimRows returns the row count of a dimension at sf.
func dimRows(name string, sf float64) int64 {
	s := dimScaling[name]
	if sf < 1 && keepSF1BelowOne[name] {
		sf = 1
	}
	base := s.countAt(sf)
	m := int64(1)
	if s.history {
		m = 2
	}
	for range s.mult {
		m *= 10
	}
	return base * m
}

func (s scaling) countAt(sf float64) int64 {
	for i, d := range definedScales {
		if d == sf {
			return s.counts[i]
		}
	}
	switch s.model {
	case static:
		return s.counts[1]
	case linear:
		panic("linear dimension scaling is not used")
	}
	// Logarithmic model: interpolate inside the enclosing slot, starting
	// from the SF0 count below SF1 and from the SF1 count above it
	// (dsdgen's rule, which is why counts never shrink below the SF1 value).
	slot := 1
	for slot < len(definedScales)-1 && sf > definedScales[slot] {
		slot++
	}
	delta := s.counts[slot] - s.counts[slot-1]
	off := (sf - definedScales[slot-1]) / (definedScales[slot] - definedScales[slot-1])
	base := s.counts[1]
	if sf < 1 {
		base = s.counts[0]
	}
	n := int64(off*float64(delta)) + base
	if n == 0 {
		n = 1
	}
	return n
}

// factRows returns the line count of a fact table at sf.
func factRows(name string, sf float64) int64 {
	exact := factLines[name]
	if n, ok := exact[sf]; ok {
		return n
	}
	if sf < 1 {
		n := int64(math.Round(sf * float64(exact[1])))
		return max(n, 1)
	}
	// Compose from the largest defined scales downwards, as dsdgen does.
	var n int64
	rest := sf
	for _, d := range []float64{1000, 100, 10, 1} {
		for rest >= d {
			n += exact[d]
			rest -= d
		}
	}
	if rest > 0 {
		n += int64(math.Round(rest * float64(exact[1])))
	}
	return n
}

// uniqueIDs returns how many business keys a history-keeping dimension with
// n rows has: every 6 rows hold 3 keys with 1, 2 and 3 versions.
func uniqueIDs(n int64) int64 {
	u := n / 6 * 3
	switch n % 6 {
	case 1:
		u++
	case 2, 3:
		u += 2
	case 4, 5:
		u += 3
	}
	return u
}

// versionOf maps a 0-based row of a history-keeping dimension to its 0-based
// business key and its version number (0 = oldest).
func versionOf(row int64) (bk int64, version, versions int) {
	blk, off := row/6, row%6
	switch {
	case off == 0:
		return blk * 3, 0, 1
	case off <= 2:
		return blk*3 + 1, int(off - 1), 2
	default:
		return blk*3 + 2, int(off - 3), 3
	}
}
