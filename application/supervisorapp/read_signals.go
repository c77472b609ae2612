package supervisorapp

import (
	"context"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ReadSignals is how an agent reads its supervisor's signals over the agent
// API (GET /signals and the SSE stream): the same signals the runtime hands
// engines on this server (signalOf), after a cursor the agent passes back,
// waiting up to a bound for the first one. Nothing is stored per reader:
// the cursor is the position, so an agent that crashed reads on from the
// last cursor it handled and loses nothing (delivery is at least once).
type ReadSignals struct {
	sups    Reader
	events  executionapp.EventTail
	cursors CursorStore
	red     EventRedactor
	reviews ReviewStore
	dels    DelegationStore
	poll    time.Duration
}

// ReadSignalsDeps are what ReadSignals needs.
type ReadSignalsDeps struct {
	Supervisors Reader
	Events      executionapp.EventTail
	Cursors     CursorStore
	Redactor    EventRedactor
	Reviews     ReviewStore
	// Delegations is read for DELEGATED and CONSULTED signals (nil: none).
	Delegations DelegationStore
	// Poll is how often a waiting read looks at the outbox again (default
	// 100 ms).
	Poll time.Duration
}

// NewReadSignals returns the use case.
func NewReadSignals(d ReadSignalsDeps) *ReadSignals {
	if d.Poll <= 0 {
		d.Poll = 100 * time.Millisecond
	}
	return &ReadSignals{sups: d.Supervisors, events: d.Events, cursors: d.Cursors, red: d.Redactor, reviews: d.Reviews, dels: d.Delegations, poll: d.Poll}
}

// Limits of one read.
const (
	MaxSignalWait  = 60 * time.Second
	MaxSignalBatch = 500
)

// SignalsInput is one read.
type SignalsInput struct {
	Supervisor supervisor.Supervisor
	// After is the cursor of the last signal handled; "" starts where the
	// supervisor was created.
	After string
	Wait  time.Duration
	Limit int
}

// SignalPage is what one read found. Cursor is where to read on: the last
// outbox position looked at, which may lie past the last signal (events of
// other units move it too).
type SignalPage struct {
	Signals []supervisor.Signal
	Cursor  string
}

// Handle reads the signals after in.After; with a wait and none yet, it
// waits until one comes or the wait runs out (an empty page, the cursor
// moved past what was looked at).
func (uc *ReadSignals) Handle(ctx context.Context, in SignalsInput) (SignalPage, error) {
	if in.Wait < 0 || in.Wait > MaxSignalWait {
		return SignalPage{}, &fault.ValidationError{Subject: "signal read", Violations: []fault.Violation{{Path: "wait",
			Message: fmt.Sprintf("must be from 0 to %d seconds", int(MaxSignalWait.Seconds()))}}}
	}
	limit := in.Limit
	if limit <= 0 || limit > MaxSignalBatch {
		limit = MaxSignalBatch
	}
	pos, err := supervisor.ParseCursor(in.After)
	if err != nil {
		return SignalPage{}, &fault.ValidationError{Subject: "signal read", Violations: []fault.Violation{{Path: "after", Message: err.Error()}}}
	}
	sup := in.Supervisor
	if in.After == "" {
		if pos, err = uc.start(ctx, sup.ID()); err != nil {
			return SignalPage{}, err
		}
	}
	q := executionapp.EventQuery{Limit: limit}
	if parent, err := uc.isParent(ctx, sup.ID()); err != nil {
		return SignalPage{}, err
	} else if !parent {
		q.SessionID = onlySession(sup.Owns())
		q.AlsoSessionless = uc.dels != nil
	}
	deadline := time.Now().Add(in.Wait)
	page := SignalPage{Signals: []supervisor.Signal{}}
	for {
		q.AfterSeq = pos
		evs, err := uc.events.Events(ctx, q)
		if err != nil {
			return SignalPage{}, err
		}
		for _, e := range evs {
			sig, ok, err := signalOf(ctx, uc.red, uc.reviews, uc.dels, sup, e)
			if err != nil {
				return SignalPage{}, fmt.Errorf("event %d: %w", e.Seq, err)
			}
			pos = e.Seq
			if ok {
				page.Signals = append(page.Signals, sig)
				if len(page.Signals) == limit {
					break
				}
			}
		}
		page.Cursor = supervisor.FormatCursor(pos)
		if len(page.Signals) > 0 || len(evs) == limit {
			return page, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return page, nil
		}
		t := time.NewTimer(min(uc.poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return SignalPage{}, ctx.Err()
		case <-t.C:
		}
	}
}

// start is where a reader without a cursor starts: the event that created
// the supervisor, or the outbox's head for one that predates those events.
func (uc *ReadSignals) start(ctx context.Context, id string) (int64, error) {
	seq, ok, err := uc.cursors.CreatedAtSeq(ctx, id)
	if err != nil || ok {
		return seq, err
	}
	return uc.events.EventHead(ctx)
}

// isParent reports whether another supervisor names id as its parent: a
// parent reads every session, since a review may climb to it from any.
func (uc *ReadSignals) isParent(ctx context.Context, id string) (bool, error) {
	list, err := uc.sups.Supervisors(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range list {
		if s.Supervisor.ParentID() == id {
			return true, nil
		}
	}
	return false, nil
}
