package executionapp

import (
	"context"
	"time"
)

// Await blocks until executions have ended or a wait runs out. It listens to
// the instance's Feed and reads each execution's status twice: once after it
// starts listening, and once at the end for the answer.
type Await struct {
	feed   *Feed
	reader Reader
}

// NewAwait returns the waiter.
func NewAwait(f *Feed, r Reader) *Await { return &Await{feed: f, reader: r} }

// RunOutcome is an execution as a wait left it.
type RunOutcome struct {
	ExecutionView
	// Ended is true when the execution reached a final status within the
	// wait.
	Ended bool
}

// Ended waits up to d for every execution in ids (all of sessionID) to end,
// and returns their status then, in the order of ids. A wait that runs out is
// not an error: the outcomes say which executions are still going. The
// caller's cancellation is.
func (a *Await) Ended(ctx context.Context, sessionID string, ids []string, d time.Duration) ([]RunOutcome, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	w, err := a.feed.watch(ctx, ids)
	if err != nil {
		return nil, err
	}
	defer a.feed.unwatch(w)
	pending := map[string]bool{}
	for _, id := range ids {
		v, err := a.reader.Execution(ctx, sessionID, id)
		if err != nil {
			return nil, err
		}
		if !v.Status.Terminal() {
			pending[id] = true
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for len(pending) > 0 {
		select {
		case id := <-w.ended:
			delete(pending, id)
		case <-timer.C:
			return a.outcomes(ctx, sessionID, ids)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return a.outcomes(ctx, sessionID, ids)
}

func (a *Await) outcomes(ctx context.Context, sessionID string, ids []string) ([]RunOutcome, error) {
	out := make([]RunOutcome, len(ids))
	for i, id := range ids {
		v, err := a.reader.Execution(ctx, sessionID, id)
		if err != nil {
			return nil, err
		}
		out[i] = RunOutcome{ExecutionView: v, Ended: v.Status.Terminal()}
	}
	return out, nil
}
