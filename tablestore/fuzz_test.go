package tablestore

import (
	"bytes"
	"testing"
)

// FuzzDecodeMeta feeds arbitrary bytes to the metadata decoder: it must
// never panic, and whatever it accepts must re-encode to an equal value.
func FuzzDecodeMeta(f *testing.F) {
	sn := &snapshot{Version: 3, ID: 7, SchemaID: 1, BaseManifestList: "a", DeltaManifestList: "b", CommitKind: commitAppend}
	good, err := encodeMeta(sn)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("{}\n#crc32c=00000000\n"))
	ents := []*manifestEntry{{Kind: kindAdd, Partition: []datum{intDatum(1), strDatum("x")}, Bucket: 2,
		File: dataFileMeta{FileName: "f", ValueStats: []colStats{{ID: 1, Min: new(intDatum(3)), Max: new(intDatum(9))}}}}}
	m, err := encodeMeta(ents)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(m)
	f.Fuzz(func(t *testing.T, data []byte) {
		var got []*manifestEntry
		if err := decodeMeta("fuzz", data, &got); err != nil {
			return
		}
		again, err := encodeMeta(got)
		if err != nil {
			t.Fatalf("accepted input does not re-encode: %v", err)
		}
		var back []*manifestEntry
		if err := decodeMeta("fuzz", again, &back); err != nil {
			t.Fatalf("re-encoded input rejected: %v", err)
		}
		third, _ := encodeMeta(back)
		if !bytes.Equal(again, third) {
			t.Fatalf("encoding not stable:\n%s\n%s", again, third)
		}
	})
}
