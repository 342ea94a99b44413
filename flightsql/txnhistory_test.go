package flightsql

import (
	"fmt"
	"testing"
	"time"
)

// TestTxnHistoryBounds backs what docs/STATUS.md says the history keeps:
// the last txnHistoryLen transactions of a connection (a statement last
// run in an older one is refused), callers up to maxTxnHistoryCallers
// (past it the one idle longest is forgotten), and nothing after the idle
// time.
func TestTxnHistoryBounds(t *testing.T) {
	h := newTxnHistory()
	c := caller{owner: "connection a", conn: "a"}
	since := time.Now().Add(-time.Second)
	for i := range txnHistoryLen + 1 {
		id := fmt.Sprint("t", i)
		h.began(c, id)
		h.ended(c, id)
	}
	if h.endedByClient(c, "t0", since) {
		t.Error("t0, begun 9 transactions ago, is still remembered")
	}
	if !h.endedByClient(c, "t1", since) {
		t.Error("t1, the oldest of the last 8, is forgotten")
	}
	h.began(c, "open")
	if h.endedByClient(c, "t8", since) {
		t.Error("t8 counts as ended by the client with a later transaction open")
	}

	first := caller{owner: "connection first", conn: "first"}
	h.began(first, "f")
	h.ended(first, "f")
	for i := range maxTxnHistoryCallers {
		h.began(caller{conn: fmt.Sprint("c", i)}, "x")
	}
	if len(h.m) != maxTxnHistoryCallers {
		t.Errorf("%d callers remembered, want at most %d", len(h.m), maxTxnHistoryCallers)
	}
	if h.endedByClient(first, "f", since) {
		t.Error("the caller idle longest is still remembered past the bound")
	}

	h.expire(time.Now().Add(2*time.Hour), time.Hour)
	if len(h.m) != 0 {
		t.Errorf("%d callers remembered after the idle time", len(h.m))
	}
}
