package nexmark

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// beamLine formats an event as beamcheck/BeamDump.java prints Beam's: the
// fields Beam's model has (bids there have no channel or url).
func beamLine(e Event) string {
	f := []string{strconv.FormatInt(e.Time, 10), strconv.FormatInt(e.Watermark, 10)}
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch e.Kind {
	case KindPerson:
		p := e.Person
		f = append(f, "P", i(p.ID), p.Name, p.EmailAddress, p.CreditCard, p.City, p.State, i(p.DateTime), p.Extra)
	case KindAuction:
		a := e.Auction
		f = append(f, "A", i(a.ID), a.ItemName, a.Description, i(a.InitialBid), i(a.Reserve), i(a.DateTime),
			i(a.Expires), i(a.Seller), i(a.Category), a.Extra)
	default:
		b := e.Bid
		f = append(f, "B", i(b.Auction), i(b.Bidder), i(b.Price), i(b.DateTime), b.Extra)
	}
	return strings.Join(f, "\t")
}

// TestBeamDump compares the generator with Beam's on the events of a dump
// made by beamcheck (see bench/README.md): NEXMARK_BEAM_DUMP names the
// file, NEXMARK_BEAM_ARGS the dump's "events rate group-size" arguments.
func TestBeamDump(t *testing.T) {
	path := os.Getenv("NEXMARK_BEAM_DUMP")
	if path == "" {
		t.Skip("NEXMARK_BEAM_DUMP not set: no dump of Beam's generator to compare with")
	}
	args := strings.Fields(os.Getenv("NEXMARK_BEAM_ARGS"))
	if len(args) != 3 {
		t.Fatalf("NEXMARK_BEAM_ARGS must be the dump's 3 arguments (events rate group-size), got %q", args)
	}
	n, err1 := strconv.ParseInt(args[0], 10, 64)
	rate, err2 := strconv.ParseInt(args[1], 10, 64)
	group, err3 := strconv.ParseInt(args[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("NEXMARK_BEAM_ARGS %q: not three integers", args)
	}
	cfg := DefaultConfig()
	cfg.Rate, cfg.OutOfOrderGroupSize = rate, group
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var count int64
	for ; sc.Scan(); count++ {
		if got, want := beamLine(cfg.Event(count)), sc.Text(); got != want {
			t.Fatalf("event %d differs from Beam's:\n got %s\nwant %s", count, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("dump has %d events, want %d", count, n)
	}
	fmt.Printf("%d events equal to Beam's\n", count)
}
