package tablestore

import (
	"bytes"
	"testing"

	"github.com/flightd/flightd/tablestore/meta"
)

// FuzzDecodeMeta feeds arbitrary bytes to the metadata decoder: it must
// never panic, and whatever it accepts must re-encode to an equal value.
func FuzzDecodeMeta(f *testing.F) {
	sn := &meta.Snapshot{Version: 3, ID: 7, SchemaID: 1, BaseManifestList: "a", DeltaManifestList: "b", CommitKind: meta.CommitAppend}
	good, err := meta.Encode(sn)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("{}\n#crc32c=00000000\n"))
	ents := []*meta.ManifestEntry{{Kind: meta.KindAdd, Partition: []meta.Datum{meta.IntDatum(1), meta.StrDatum("x")}, Bucket: 2,
		File: meta.DataFile{FileName: "f", ValueStats: []meta.ColStats{{ID: 1, Min: new(meta.IntDatum(3)), Max: new(meta.IntDatum(9))}}}}}
	m, err := meta.Encode(ents)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(m)
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []*meta.ManifestEntry
		if err := meta.Decode("fuzz", data, &got); err != nil {
			return
		}
		again, err := meta.Encode(got)
		if err != nil {
			t.Fatalf("accepted input does not re-encode: %v", err)
		}
		var back []*meta.ManifestEntry
		if err := meta.Decode("fuzz", again, &back); err != nil {
			t.Fatalf("re-encoded input rejected: %v", err)
		}
		third, _ := meta.Encode(back)
		if !bytes.Equal(again, third) {
			t.Fatalf("encoding not stable:\n%s\n%s", again, third)
		}
	})
}
