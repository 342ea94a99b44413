package flightsql

import (
	"sync"
	"time"
)

// txnHistory remembers, per caller, the last transactions it began and
// which of them it ended itself, with a commit or rollback that succeeded.
// A statement prepared in a transaction runs outside one once its client
// itself ended that transaction and every one begun since, with none open:
// ADBC then has autocommit on, for its manual mode begins the next
// transaction as it commits. A transaction the server ended (idle past the
// timeout) or whose commit failed keeps the statement refused, even one it
// never ran in: its client may believe it is still in it, and a write run
// outside would survive the rollback the client may send next.
type txnHistory struct {
	mu sync.Mutex
	m  map[caller]*callerTxns
}

// txnHistoryLen transactions are remembered per caller; a statement last
// run before that many more began is refused.
const txnHistoryLen = 8

// maxTxnHistoryCallers bounds the callers remembered (a client churning
// connections adds one each): past it, the one idle longest is forgotten.
const maxTxnHistoryCallers = 1 << 16

type callerTxns struct {
	ring [txnHistoryLen]txnRecord // the newest at next-1
	next int
	at   time.Time // of the last change
}

type txnRecord struct {
	id    string
	began time.Time
	ended bool // by the client
}

func newTxnHistory() *txnHistory { return &txnHistory{m: make(map[caller]*callerTxns)} }

// began records that c began transaction id.
func (h *txnHistory) began(c caller, id string) {
	if c.conn == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ct := h.m[c]
	if ct == nil {
		if len(h.m) >= maxTxnHistoryCallers {
			h.forgetOldest()
		}
		ct = &callerTxns{}
		h.m[c] = ct
	}
	now := time.Now()
	ct.ring[ct.next%txnHistoryLen] = txnRecord{id: id, began: now}
	ct.next++
	ct.at = now
}

func (h *txnHistory) forgetOldest() {
	var oldest caller
	var at time.Time
	for c, ct := range h.m {
		if at.IsZero() || ct.at.Before(at) {
			oldest, at = c, ct.at
		}
	}
	delete(h.m, oldest)
}

// ended records that c's commit or rollback of id succeeded.
func (h *txnHistory) ended(c caller, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ct := h.m[c]; ct != nil {
		if n, ok := ct.find(id); ok {
			ct.ring[n%txnHistoryLen].ended = true
			ct.at = time.Now()
		}
	}
}

// endedByClient reports whether c itself ended id and every transaction it
// began after since: then a statement that ran in id, or outside after id
// ended, at since runs outside one now.
func (h *txnHistory) endedByClient(c caller, id string, since time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ct := h.m[c]
	if ct == nil {
		return false
	}
	from, ok := ct.find(id)
	if !ok {
		return false
	}
	for n := from; n < ct.next; n++ {
		if r := ct.ring[n%txnHistoryLen]; (n == from || r.began.After(since)) && !r.ended {
			return false
		}
	}
	return true
}

// find returns the sequence number (not the ring index) of id.
func (ct *callerTxns) find(id string) (int, bool) {
	for n := ct.next - 1; n >= max(0, ct.next-txnHistoryLen); n-- {
		if ct.ring[n%txnHistoryLen].id == id {
			return n, true
		}
	}
	return 0, false
}

// expire forgets callers that began or ended nothing for idle: a statement
// whose transaction they ended has been idle as long, and closed.
func (h *txnHistory) expire(now time.Time, idle time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c, ct := range h.m {
		if now.Sub(ct.at) > idle {
			delete(h.m, c)
		}
	}
}
