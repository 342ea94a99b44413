package tablestore

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// pageZstd is arrow-go's zstd codec for Parquet pages, except that the
// frames it writes carry no content checksum (an xxhash of every page
// written, 1.4% of a Nexmark bid ingest's CPU): a data file's CRC in the
// manifest covers its bytes already, and zstd readers take frames with or
// without one. Same level, same other encoder settings, so the same
// compressed blocks; reading is arrow-go's.
type pageZstd struct{ zstdCodec }

type zstdCodec interface {
	compress.ErrorCodec
	compress.StreamingCodec
}

func init() {
	if c, err := compress.GetCodec(compress.Codecs.Zstd); err == nil {
		if base, ok := c.(zstdCodec); ok {
			compress.RegisterCodec(compress.Codecs.Zstd, pageZstd{base})
		}
	}
}

// pageEncoders pools encoders per level (zstd.SpeedFastest..SpeedBestCompression).
var pageEncoders [zstd.SpeedBestCompression + 1]sync.Pool

func (pageZstd) Encode(dst, src []byte) []byte {
	return pageZstd{}.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (pageZstd) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	enc, _ := pageEncoders[l].Get().(*zstd.Encoder)
	if enc == nil {
		// arrow-go's settings, but for the checksum.
		enc, _ = zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true), zstd.WithEncoderCRC(false))
	}
	defer pageEncoders[l].Put(enc)
	return enc.EncodeAll(src, dst[:0])
}
