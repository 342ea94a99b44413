package tablestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/tablestore/meta"
)

// BenchmarkManifestCodec: encoding and decoding one manifest of 100
// entries, Paimon's Avro against flightd's former JSON.
func BenchmarkManifestCodec(b *testing.B) {
	s, _, _ := newTestStore(b)
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	id := Ident{Database: "db", Table: "t"}
	if _, err := s.CreateTable(ctx, id, TableDef{Schema: sc, PrimaryKey: []string{"k"}, Options: map[string]string{"bucket": "4"}}, false); err != nil {
		b.Fatal(err)
	}
	st := s.state(id)
	sch, _ := st.latestSchema()
	var ents []*meta.ManifestEntry
	for i := 0; i < 100; i++ {
		lo, hi := meta.IntDatum(int64(i)), meta.IntDatum(int64(i+100))
		sa, sb := meta.StrDatum("aaa"), meta.StrDatum(fmt.Sprint("zzz", i))
		f := meta.DataFile{FileName: fmt.Sprint("data-", i), RowCount: 1000, SchemaID: sch.ID, MinKey: []meta.Datum{lo}, MaxKey: []meta.Datum{hi},
			ValueStats: []meta.ColStats{{ID: 0, Min: &lo, Max: &hi}, {ID: 1, Min: &sa, Max: &sb, NDV: 10}, {ID: 2, Min: &lo, Max: &hi, NullCount: 3}}}
		f.Path = st.filePath(sch, nil, i%4, f.FileName)
		ents = append(ents, &meta.ManifestEntry{Kind: meta.KindAdd, Bucket: i % 4, TotalBuckets: 4, File: f})
	}
	avro, _ := st.encodeManifest(ents)
	js, _ := meta.Encode(ents)
	b.Run("avro-decode", func(b *testing.B) {
		for range b.N {
			if _, err := st.decodeManifest("x", avro); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-decode", func(b *testing.B) {
		for range b.N {
			if _, err := st.decodeManifest("x", js); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("avro-encode", func(b *testing.B) {
		for range b.N {
			st.encodeManifest(ents)
		}
	})
	b.Run("json-encode", func(b *testing.B) {
		for range b.N {
			meta.Encode(ents)
		}
	})
}
