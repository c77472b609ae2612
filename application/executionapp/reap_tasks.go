package executionapp

import (
	"context"
	"fmt"
	"time"
)

// ExpiredTasks finds the task items whose worker lease ran out.
type ExpiredTasks interface {
	// ExpiredTasks returns up to n leased task items whose lease_until has
	// passed, with the owner and token of the lapsed lease.
	ExpiredTasks(ctx context.Context, n int) ([]TaskClaim, error)
}

// reapTaskBatch bounds the lapsed leases one round fails.
const reapTaskBatch = 256

// reapTasks fails the attempts whose worker lease ran out: a worker that
// went silent for its heartbeatTimeout, or an attempt past its timeout. The
// node's retry policy then delivers the task again with attempt + 1, or
// fails the node, exactly as a built-in attempt that failed. Each failure is
// committed against the lapsed lease, so a worker's answer that races it
// wins or loses whole: one of the two is applied.
func (e *Engine) reapTasks(ctx context.Context) {
	if e.expired == nil {
		return
	}
	t := time.NewTicker(max(e.cfg.Lease/15, 250*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lapsed, err := e.expired.ExpiredTasks(ctx, reapTaskBatch)
		if err != nil {
			if ctx.Err() == nil {
				e.onError("reap tasks", err)
			}
			continue
		}
		byOwner := map[string][]result{}
		for _, tc := range lapsed {
			r, err := e.runs.get(ctx, tc.ExecutionID)
			if err != nil {
				if ctx.Err() == nil {
					e.onError("reap tasks", err)
				}
				continue
			}
			res := result{claim: tc.Claim, run: r, began: tc.ClaimedAt, ended: e.now()}
			if !tc.Deadline.IsZero() && !tc.LeaseUntil.Before(tc.Deadline) {
				res.err = fmt.Errorf("%w: attempt %d of the task was not answered within its timeout of %s (leased to %s)",
					errTaskTimedOut, tc.Attempt, r.nodes[tc.NodeID].timeout, tc.Owner)
			} else {
				res.err = fmt.Errorf("%w: %s sent no heartbeat within heartbeatTimeout (%s) for attempt %d; the worker is taken for dead",
					errTaskSilent, tc.Owner, tc.Lease, tc.Attempt)
			}
			e.tmetrics.TaskAnswered("lapsed", res.ended.Sub(res.began))
			byOwner[tc.Owner] = append(byOwner[tc.Owner], res)
		}
		for owner, batch := range byOwner {
			by := committer{owner: owner, actor: EngineActor, channel: EngineChannel}
			if err := e.commitRetrying(ctx, nil, by, batch); err != nil && ctx.Err() == nil {
				e.onError("reap tasks", err)
			}
		}
	}
}
