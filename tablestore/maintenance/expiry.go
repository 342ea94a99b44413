package maintenance

// Retention says which snapshots expiry keeps, from a table's options
// (snapshot.num-retained.min/max, snapshot.time-retained) or a call's
// overrides.
type Retention struct {
	Min int // the newest Min snapshots stay
	// Max: snapshots older than the newest Max expire whatever their
	// time; the newest Max expire only when older than Before.
	Max    int
	Before int64 // Unix milliseconds
	// Protect is the oldest snapshot something still needs (the latest, a
	// lease, a consumer, the last full-compaction changelog): it and every
	// later one stay.
	Protect int64
	// MaxDeletes bounds the snapshots expired at once (0: no bound).
	MaxDeletes int
}

// Expirable returns how many of the oldest snapshots expire: the longest
// prefix of ids (ascending) every snapshot of which r lets go, at most
// r.MaxDeletes. Expiry removes a prefix because a snapshot's files are
// found from the delete entries of the snapshots after it. timeMillis gives
// a snapshot's commit time; it is asked only about snapshots among the
// newest r.Max, so that the others' files need not be read.
func Expirable(ids []int64, r Retention, timeMillis func(id int64) (int64, error)) (int, error) {
	n := 0
	for i, id := range ids {
		if len(ids)-i <= r.Min || id >= r.Protect {
			break
		}
		if len(ids)-i <= r.Max {
			t, err := timeMillis(id)
			if err != nil {
				return 0, err
			}
			if t >= r.Before {
				break
			}
		}
		n = i + 1
	}
	if r.MaxDeletes > 0 {
		n = min(n, r.MaxDeletes)
	}
	return n, nil
}
