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
// A cursor is a position in the outbox's one order (supervisor.Position):
// a read after it never returns an event at or before it, whether or not
// its own event still exists, and a cursor beyond the head is refused.
type ReadSignals struct {
	sups    Reader
	events  executionapp.EventTail
	pos     OutboxPositions
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
	// Positions gives the head and resolves an older server's cursors.
	Positions OutboxPositions
	Cursors   CursorStore
	Redactor  EventRedactor
	Reviews   ReviewStore
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
	return &ReadSignals{sups: d.Supervisors, events: d.Events, pos: d.Positions, cursors: d.Cursors, red: d.Redactor, reviews: d.Reviews, dels: d.Delegations, poll: d.Poll}
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
	sup := in.Supervisor
	pos, err := uc.position(ctx, sup.ID(), in.After)
	if err != nil {
		return SignalPage{}, err
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
		q.AfterXID, q.AfterSeq = pos.XID, pos.Seq
		evs, err := uc.events.Events(ctx, q)
		if err != nil {
			return SignalPage{}, err
		}
		for _, e := range evs {
			sig, ok, err := signalOf(ctx, uc.red, uc.reviews, uc.dels, sup, e)
			if err != nil {
				return SignalPage{}, fmt.Errorf("event %d: %w", e.Seq, err)
			}
			pos = EventPosition(e)
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

// position is where a read after the cursor after goes on from: "" is
// where the supervisor was created; a cursor this server gave is its own
// position, whether or not its event still exists; an older server's
// cursor (a bare seq) is the position of its event, refused when that
// event is gone, since its place can no longer be known. A cursor beyond
// the head is refused naming the head.
func (uc *ReadSignals) position(ctx context.Context, id, after string) (supervisor.Position, error) {
	pos, err := supervisor.ParseCursor(after)
	if err != nil {
		return pos, afterRefused(err.Error())
	}
	if after == "" {
		return startPosition(ctx, uc.cursors, uc.pos, id)
	}
	head, err := uc.pos.Head(ctx)
	if err != nil {
		return pos, err
	}
	frontier, err := uc.pos.Frontier(ctx)
	if err != nil {
		return pos, err
	}
	next := fmt.Sprintf("pass back a cursor this server gave, after=%s to read only what comes next, or leave after out to start where the supervisor was created", supervisor.FormatCursor(head))
	if pos.Beyond(frontier) {
		return pos, afterRefused(fmt.Sprintf("cursor %s lies beyond the head of the signal sequence, %s; no signal has it yet. %s", after, supervisor.FormatCursor(head), upper(next)))
	}
	if pos.Legacy() {
		p, ok, err := uc.pos.PositionOf(ctx, pos.Seq)
		if err != nil {
			return pos, err
		}
		if !ok {
			return pos, afterRefused(fmt.Sprintf("cursor %s is an older server's and its event no longer exists (retention deletes old events), so its place in the signal sequence is unknown; %s", after, next))
		}
		pos = p
	}
	return pos, nil
}

// afterRefused is the refusal of a read's after.
func afterRefused(msg string) error {
	return &fault.ValidationError{Subject: "signal read", Violations: []fault.Violation{{Path: "after", Message: msg}}}
}

// upper capitalises the first letter of s.
func upper(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
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
