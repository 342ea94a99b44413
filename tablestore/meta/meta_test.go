package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestEncodeDecode(t *testing.T) {
	in := map[string]int{"a": 1}
	data, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	if !HasTrailer(data) {
		t.Fatalf("no trailer in %q", data)
	}
	var out map[string]int
	if err := Decode("f", data, &out); err != nil || out["a"] != 1 {
		t.Fatalf("Decode = %v, %v", out, err)
	}
	bad := bytes.Replace(data, []byte(`"a":1`), []byte(`"a":2`), 1)
	if err := Decode("f", bad, &out); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged body: %v, want ErrCorrupt", err)
	}
	// Paimon's plain JSON has no trailer.
	if HasTrailer([]byte(`{"a":1}`)) {
		t.Fatal("plain JSON has a trailer")
	}
	if err := Decode("f", []byte(`{"a":3}`), &out); err != nil || out["a"] != 3 {
		t.Fatalf("plain: %v, %v", out, err)
	}
	if err := Decode("f", []byte(`{"a":`), &out); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated: %v, want ErrCorrupt", err)
	}
}

func TestSnapshotChecksum(t *testing.T) {
	prev := Snapshot{Version: 3, ID: 1, CommitKind: CommitAppend}
	data, err := json.Marshal(prev)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &prev); err != nil {
		t.Fatal(err)
	}
	if prev.Checksum == 0 {
		t.Fatal("no checksum written")
	}
	next := Snapshot{Version: 3, ID: 2, CommitKind: CommitCompact, Parent: prev.Checksum}
	if !next.Follows(&prev) {
		t.Fatal("next does not follow its parent")
	}
	other := Snapshot{ID: 2, Parent: prev.Checksum + 1}
	if other.Follows(&prev) {
		t.Fatal("a snapshot of another parent follows")
	}
	var s Snapshot
	bad := bytes.Replace(data, []byte(`"id":1`), []byte(`"id":7`), 1)
	if err := json.Unmarshal(bad, &s); err == nil {
		t.Fatal("a damaged snapshot parsed")
	}
}

func TestDatumJSON(t *testing.T) {
	for _, d := range []Datum{IntDatum(-3), FloatDatum(math.Inf(-1)), StrDatum("x"), StrDatum("\xff"), BinDatum([]byte{0, 1}), {Null: true}} {
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var got Datum
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if c, ok := CompareDatum(d, got); !d.Null && (!ok || c != 0) {
			t.Errorf("%s: round trip differs (%d, %v)", data, c, ok)
		}
	}
	if c, ok := CompareDatum(IntDatum(2), FloatDatum(2.5)); !ok || c >= 0 {
		t.Errorf("2 vs 2.5: %d, %v", c, ok)
	}
	if _, ok := CompareDatum(FloatDatum(math.NaN()), FloatDatum(1)); ok {
		t.Error("NaN compared")
	}
}

func TestBinaryRowDatums(t *testing.T) {
	types := []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, &arrow.TimestampType{Unit: arrow.Microsecond}, arrow.FixedWidthTypes.Boolean}
	ds := []Datum{IntDatum(-7), StrDatum("k"), IntDatum(-1_234_567), IntDatum(1)}
	row, exact, err := EncodeDatums(types, ds)
	if err != nil || !exact {
		t.Fatalf("EncodeDatums: exact %v, %v", exact, err)
	}
	back, err := DecodeDatums(types, row)
	if err != nil || !reflect.DeepEqual(back, ds) {
		t.Fatalf("DecodeDatums = %v, %v; want %v", back, err, ds)
	}
	// A decimal has no datum: the row holds NULL, so it is not exact.
	dec := []arrow.DataType{&arrow.Decimal128Type{Precision: 10, Scale: 2}}
	if _, exact, err := EncodeDatums(dec, []Datum{{}}); err != nil || exact {
		t.Fatalf("decimal: exact %v, %v", exact, err)
	}
}
