package vectorized

import (
	"math"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// javaShape is Java's Double.toString: plain with at least one decimal in
// [1e-3, 1e7), else d.dddE[-]n.
var (
	javaPlain = regexp.MustCompile(`^-?\d+\.\d+$`)
	javaSci   = regexp.MustCompile(`^-?\d\.\d+E-?\d+$`)
)

// TestJavaFloatRandom: every finite float64 and float32 formats in Java's
// shape for its magnitude and parses back to itself.
func TestJavaFloatRandom(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 100000; i++ {
		f := math.Float64frombits(rng.Uint64())
		if i%2 == 0 {
			f = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.Intn(30)-12))
		}
		bits := 64
		if i%3 == 0 {
			f, bits = float64(float32(f)), 32
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := javaFloat(f, bits)
		abs := math.Abs(f)
		if plain := abs == 0 || (abs >= 1e-3 && abs < 1e7); plain && !javaPlain.MatchString(s) || !plain && !javaSci.MatchString(s) {
			t.Fatalf("%v (%d bits) formats as %q", f, bits, s)
		}
		back, err := strconv.ParseFloat(strings.Replace(s, "E", "e", 1), bits)
		if err != nil || back != f {
			t.Fatalf("%v (%d bits) formats as %q, which reads back as %v (%v)", f, bits, s, back, err)
		}
	}
	for f, want := range map[float64]string{math.Inf(1): "Infinity", math.Inf(-1): "-Infinity", 100: "100.0", 1e7: "1.0E7", 1e-4: "1.0E-4", -1.5e-7: "-1.5E-7"} {
		if got := javaFloat(f, 64); got != want {
			t.Errorf("javaFloat(%v) = %q, want %q", f, got, want)
		}
	}
}
