package tablestore

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// TestPageZstd: pages are written by pageZstd, and its frames are
// arrow-go's without the 4-byte checksum, decoded by arrow-go to the same
// bytes, at levels 1, 3 and the default.
func TestPageZstd(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	pz, ok := c.(pageZstd)
	if !ok {
		t.Fatalf("the zstd codec is %T, want pageZstd", c)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 50 {
		src := make([]byte, rng.IntN(200_000))
		for i := range src {
			src[i] = byte('a' + rng.IntN(1+iter%26))
		}
		for _, level := range []int{1, 3, compress.DefaultCompressionLevel} {
			got := pz.EncodeLevel(nil, src, level)
			was := pz.zstdCodec.EncodeLevel(nil, src, level)
			if len(src) > 0 && len(got) != len(was)-4 {
				t.Fatalf("iter %d level %d: %d bytes, arrow-go's %d", iter, level, len(got), len(was))
			}
			back, err := compress.Decode(c, nil, got)
			if err != nil || !bytes.Equal(back, src) {
				t.Fatalf("iter %d level %d: decoded %d bytes (%v), want %d", iter, level, len(back), err, len(src))
			}
		}
	}
}
