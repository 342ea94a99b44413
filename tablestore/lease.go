package tablestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
)

// Leases let one of several nodes on a warehouse do a piece of work at a
// time (run a continuous job). A lease is a sequence of records
// _leases/<name>/lease-<epoch>, each published with RenameNoReplace, the
// put-if-absent that snapshot commits use (a hard link on a local disk,
// If-None-Match on an object store): of two nodes publishing the same
// epoch exactly one wins, and no record is ever overwritten. The newest
// epoch is the lease. Its owner holds it until its expiry, by the clock of
// the node that wrote it; the owner renews it by publishing the next epoch,
// another node takes it once expired (or released) by publishing the next
// epoch as the owner. Nodes' clocks are assumed to agree to well within a
// lease's lifetime, as Paimon's and most leases on object stores assume.

// Lease is one record of a lease.
type Lease struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Epoch int64  `json:"epoch"`
	// ExpiresMillis is the end of the lease (Unix ms); 0 once released.
	ExpiresMillis int64 `json:"expiresMillis"`
}

// ErrLeaseHeld marks a lease another owner holds, or took from the caller.
var ErrLeaseHeld = errors.New("lease held by another owner")

// The leases directory starts with '_', which no database name may.
const leaseDirName = "_leases"

const leasePrefix = "lease-"

func (s *Store) leaseDir(name string) string { return joinPath(s.root, leaseDirName, name) }

// latestEpoch is the newest epoch of lease name (0: none).
func (s *Store) latestEpoch(name string) (int64, error) {
	names, err := s.fs.List(s.leaseDir(name))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lease %s: %w", name, err)
	}
	var epoch int64
	for _, n := range names {
		if e, err := strconv.ParseInt(strings.TrimPrefix(n, leasePrefix), 10, 64); err == nil && strings.HasPrefix(n, leasePrefix) {
			epoch = max(epoch, e)
		}
	}
	return epoch, nil
}

// latestLease reads the newest record of lease name (a zero Lease when
// there is none).
func (s *Store) latestLease(name string) (Lease, error) {
	epoch, err := s.latestEpoch(name)
	if err != nil {
		return Lease{}, err
	}
	if epoch == 0 {
		return Lease{Name: name}, nil
	}
	var l Lease
	if err := readMeta(s.fs, s.leasePath(name, epoch), &l); err != nil {
		// A record removed between the listing and the read is two epochs
		// old: the lease moved on meanwhile.
		if errors.Is(err, fs.ErrNotExist) {
			return Lease{}, fmt.Errorf("%w: lease %s changed while read", ErrLeaseHeld, name)
		}
		return Lease{}, fmt.Errorf("lease %s: %w", name, err)
	}
	return l, nil
}

// LeaseHolder returns the owner that holds lease name now, or "" when
// nobody does (never taken, expired or released).
func (s *Store) LeaseHolder(ctx context.Context, name string) (string, error) {
	if err := validateName("lease", name); err != nil {
		return "", err
	}
	l, err := s.latestLease(name)
	if err != nil || l.ExpiresMillis <= s.opts.Now().UnixMilli() {
		return "", err
	}
	return l.Owner, nil
}

func (s *Store) leasePath(name string, epoch int64) string {
	return joinPath(s.leaseDir(name), leasePrefix+strconv.FormatInt(epoch, 10))
}

// AcquireLease makes owner the holder of lease name for ttl when nobody
// holds it (never taken, expired or released) or owner does (a node
// restarted under its name: owners must be unique among live nodes). When
// another owner holds it the error wraps ErrLeaseHeld and the Lease
// returned is the holder's.
func (s *Store) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (Lease, error) {
	if err := validateName("lease", name); err != nil {
		return Lease{}, err
	}
	cur, err := s.latestLease(name)
	if err != nil {
		return cur, err
	}
	if cur.Epoch > 0 && cur.Owner != owner && cur.ExpiresMillis > s.opts.Now().UnixMilli() {
		return cur, fmt.Errorf("%w: %s holds lease %s until %s", ErrLeaseHeld, cur.Owner, name, time.UnixMilli(cur.ExpiresMillis).UTC().Format(time.RFC3339Nano))
	}
	return s.publishLease(Lease{Name: name, Owner: owner, Epoch: cur.Epoch + 1, ExpiresMillis: s.opts.Now().Add(ttl).UnixMilli()})
}

// RenewLease extends l, which the caller holds, to ttl from now. It fails
// with ErrLeaseHeld when another owner published the next epoch (took the
// lease after it expired).
func (s *Store) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	l.Epoch++
	l.ExpiresMillis = s.opts.Now().Add(ttl).UnixMilli()
	return s.publishLease(l)
}

// ReleaseLease ends l, which the caller holds, so that another owner can
// take it at once.
func (s *Store) ReleaseLease(ctx context.Context, l Lease) error {
	l.Epoch++
	l.ExpiresMillis = 0
	_, err := s.publishLease(l)
	return err
}

// publishLease publishes record l, then removes the record two epochs
// older (the previous one stays, so a reader that listed before this
// publication still finds the record it listed).
func (s *Store) publishLease(l Lease) (Lease, error) {
	dir := s.leaseDir(l.Name)
	if err := s.fs.MkdirAll(dir); err != nil {
		return Lease{}, fmt.Errorf("lease %s: %w", l.Name, err)
	}
	tmp := joinPath(dir, ".tmp-"+newUUID())
	if _, err := writeMeta(s.fs, tmp, l); err != nil {
		_ = s.fs.Remove(tmp)
		return Lease{}, fmt.Errorf("lease %s: %w", l.Name, err)
	}
	final := s.leasePath(l.Name, l.Epoch)
	if err := s.fs.RenameNoReplace(tmp, final); err != nil {
		_ = s.fs.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			return Lease{}, fmt.Errorf("%w: lease %s epoch %d was published by another owner", ErrLeaseHeld, l.Name, l.Epoch)
		}
		return Lease{}, fmt.Errorf("lease %s: %w", l.Name, err)
	}
	if err := s.fs.SyncDir(dir); err != nil {
		return Lease{}, fmt.Errorf("lease %s: %w", l.Name, err)
	}
	// Read back: a publication the file system acknowledged but lost must
	// not make two holders.
	var got Lease
	if err := readMeta(s.fs, final, &got); err != nil {
		return Lease{}, fmt.Errorf("lease %s: %w", l.Name, err)
	}
	if got != l {
		return Lease{}, fmt.Errorf("%w: lease %s epoch %d was published by %s", ErrLeaseHeld, l.Name, l.Epoch, got.Owner)
	}
	// Records two epochs old are removed as the lease moves on, so the
	// epoch a stale renewal (or an acquisition that read an old epoch)
	// publishes can be free again. The publication that freed it (two
	// epochs up) came first and the newest record is never removed, so a
	// listing now shows a newer epoch exactly when this record is stale
	// (TestLeaseStaleRenewal).
	if newest, err := s.latestEpoch(l.Name); err != nil || newest > l.Epoch {
		_ = s.fs.Remove(final)
		if err != nil {
			return Lease{}, err
		}
		return Lease{}, fmt.Errorf("%w: lease %s moved on to epoch %d past %d", ErrLeaseHeld, l.Name, newest, l.Epoch)
	}
	if l.Epoch > 2 {
		_ = s.fs.Remove(s.leasePath(l.Name, l.Epoch-2)) // best effort: a leftover record is only clutter
	}
	return l, nil
}
