package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/flightd/flightd/tablestore"
)

// Several nodes may serve one warehouse, and each knows every job (stored
// in _jobs, or a CONTINUOUS materialized table): a lease per job in the
// warehouse (tablestore.AcquireLease) decides which node runs it. A node
// runs a job only while it holds the job's lease, renews it every quarter
// of its lifetime, and stops the job when it could not renew it with half
// the lifetime left (or another node took it), so that the job has
// stopped before any other node may take the lease. A node whose job ends
// (stopped, failed, shutdown) releases the lease; one that dies leaves it
// to expire, and another node takes over within a lifetime and a poll.
// A commit that hangs in the store past the deadline is cancelled with the
// run: if another node's commit took its snapshot number meanwhile, it is
// not retried, so a stale answer never lands after the new holder's
// (TestJobStaleCommitNeverLands).

// DefaultJobLease is the lifetime of a job's lease when Config.JobLease is 0.
const DefaultJobLease = 10 * time.Second

// errLeaseLost cancels a run whose node no longer holds the job's lease.
var errLeaseLost = errors.New("the job's lease was lost")

func (e *Engine) jobLease() time.Duration {
	if e.cfg.JobLease > 0 {
		return e.cfg.JobLease
	}
	return DefaultJobLease
}

// newNodeID names an engine in leases when Config.NodeID does not: at
// random, so that a restarted node waits for the leases of its former
// self to expire.
func newNodeID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// runLeased runs the job whenever this node holds its lease, until ctx
// ends or the job ends by itself.
func (j *job) runLeased(ctx context.Context) error {
	for {
		l, deadline, err := j.waitLease(ctx)
		if err != nil {
			return err
		}
		j.e.logf("job %s runs on this node (%s, lease epoch %d)", j.def.ID, j.e.node, l.Epoch)
		runCtx, cancel := context.WithCancelCause(ctx)
		renewed := make(chan tablestore.Lease, 1)
		go func() { renewed <- j.renew(runCtx, cancel, l, deadline) }()
		err = j.run(runCtx)
		lost := errors.Is(context.Cause(runCtx), errLeaseLost)
		if lost {
			j.e.logf("job %s stopped on this node: its lease was lost (not renewed in time, or taken)", j.def.ID)
		}
		cancel(nil)
		l = <-renewed // after a renewal that hangs
		if !lost {
			// Best effort: an unreleased lease expires.
			_ = j.e.store.ReleaseLease(context.WithoutCancel(ctx), l)
			return err
		}
		if ctx.Err() != nil {
			return err
		}
	}
}

// waitLease takes the job's lease, polling while another node holds it.
// The deadline is when this node must have stopped the job unless it
// renewed the lease.
func (j *job) waitLease(ctx context.Context) (tablestore.Lease, time.Time, error) {
	ttl := j.e.jobLease()
	for {
		start := time.Now()
		l, err := j.e.store.AcquireLease(ctx, j.def.ID, j.e.node, ttl)
		if err == nil {
			return l, start.Add(ttl / 2), nil
		}
		// Held elsewhere, or the store failed for now: try again.
		timer := time.NewTimer(ttl / 4)
		select {
		case <-ctx.Done():
			timer.Stop()
			return l, time.Time{}, ctx.Err()
		case <-timer.C:
		}
	}
}

// renew renews lease l every quarter of its lifetime until ctx ends, and
// cancels the run with errLeaseLost when the lease is lost or the deadline
// to renew it passes. The deadline holds while a renewal hangs (a store
// call does not end with ctx): the run stops on time, and renew returns
// once that renewal has. It returns the last lease held.
func (j *job) renew(ctx context.Context, cancel context.CancelCauseFunc, l tablestore.Lease, deadline time.Time) tablestore.Lease {
	ttl := j.e.jobLease()
	tick := time.NewTicker(ttl / 4)
	defer tick.Stop()
	expire := time.NewTimer(time.Until(deadline))
	defer expire.Stop()
	type renewal struct {
		l   tablestore.Lease
		err error
	}
	for {
		select {
		case <-ctx.Done():
			return l
		case <-expire.C:
			cancel(errLeaseLost)
			return l
		case <-tick.C:
		}
		start := time.Now()
		done := make(chan renewal, 1)
		go func() {
			nl, err := j.e.store.RenewLease(ctx, l, ttl)
			done <- renewal{nl, err}
		}()
		var r renewal
		select {
		case r = <-done:
		case <-expire.C:
			cancel(errLeaseLost)
			if r = <-done; r.err == nil {
				l = r.l // renewed too late: release what is held
			}
			return l
		}
		switch {
		case r.err == nil:
			l = r.l
			expire.Reset(time.Until(start.Add(ttl / 2)))
		case errors.Is(r.err, tablestore.ErrLeaseHeld):
			cancel(errLeaseLost)
			return l
		}
	}
}

// followJobs keeps this node's jobs in step with the warehouse, which
// other nodes change, every half lease lifetime until the engine closes.
func (e *Engine) followJobs() {
	defer close(e.followDone)
	ttl := e.jobLease()
	tick := time.NewTicker(ttl / 2)
	defer tick.Stop()
	for {
		select {
		case <-e.jobCtx.Done():
			return
		case <-tick.C:
		}
		e.syncJobs(e.jobCtx)
	}
}

// syncJobs starts the jobs another node started, ends those another node
// stopped, and follows the materialized tables' definitions. Errors are
// left to the next round.
func (e *Engine) syncJobs(ctx context.Context) {
	defs, err := e.store.Jobs(ctx)
	if err != nil {
		return
	}
	for _, def := range defs {
		e.jobsMu.Lock()
		j, known := e.jobs[def.ID]
		if !known && def.State == JobRunning && ctx.Err() == nil {
			e.launchLocked(def, "", nil)
		}
		e.jobsMu.Unlock()
		if known && def.State != JobRunning && j.running() {
			j.cancel()
			<-j.done
			j.mu.Lock()
			j.status.State, j.status.Error = def.State, def.Error
			j.mu.Unlock()
		}
	}
	_ = e.eachMaterialized(ctx, func(id tablestore.Ident) {
		if def, fresh := e.continuousWanted(ctx, id); e.continuousInStep(id, def, fresh) {
			return // a failed job waits for its retry here, not restarted at once
		}
		mu := e.refreshLock(id)
		mu.Lock()
		e.syncContinuous(ctx, id)
		mu.Unlock()
	})
}
