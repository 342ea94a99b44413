package nexmark

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestWriteCSV reads the files back: every event once, in emission
// order, with its fields.
func TestWriteCSV(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.ProbDelayedEvent = 0.1
	const n = 5000
	if err := WriteCSV(dir, cfg, n); err != nil {
		t.Fatal(err)
	}
	read := func(name string) [][]string {
		f, err := os.Open(filepath.Join(dir, name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatalf("%s.csv: %v", name, err)
		}
		return recs
	}
	files := [3][][]string{read("person"), read("auction"), read("bid")}
	var next [3]int
	ts := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") }
	for _, e := range NewSource(cfg, n).Next(n) {
		rec := files[e.Kind][next[e.Kind]]
		next[e.Kind]++
		var want []string
		switch e.Kind {
		case KindPerson:
			want = []string{strconv.FormatInt(e.Person.ID, 10), e.Person.Name, e.Person.EmailAddress, e.Person.CreditCard, e.Person.City, e.Person.State, ts(e.Time), e.Person.Extra}
		case KindAuction:
			want = []string{strconv.FormatInt(e.Auction.ID, 10), e.Auction.ItemName, e.Auction.Description, strconv.FormatInt(e.Auction.InitialBid, 10),
				strconv.FormatInt(e.Auction.Reserve, 10), ts(e.Time), ts(e.Auction.Expires), strconv.FormatInt(e.Auction.Seller, 10),
				strconv.FormatInt(e.Auction.Category, 10), e.Auction.Extra}
		default:
			want = []string{strconv.FormatInt(e.Bid.Auction, 10), strconv.FormatInt(e.Bid.Bidder, 10), strconv.FormatInt(e.Bid.Price, 10),
				e.Bid.Channel, e.Bid.URL, ts(e.Time), e.Bid.Extra}
		}
		if len(rec) != len(want) {
			t.Fatalf("kind %d row %d: %d fields, want %d", e.Kind, next[e.Kind]-1, len(rec), len(want))
		}
		for i := range want {
			if rec[i] != want[i] {
				t.Fatalf("kind %d row %d field %d: %q, want %q", e.Kind, next[e.Kind]-1, i, rec[i], want[i])
			}
		}
	}
	for k, f := range files {
		if next[k] != len(f) {
			t.Errorf("kind %d: %d rows written, %d events", k, len(f), next[k])
		}
	}
	if side := read("side_input"); len(side) != SideInputRows || side[7][0] != "7" || side[7][1] != "7" {
		t.Errorf("side_input: %d rows, row 7 %v", len(side), side[7])
	}
}
