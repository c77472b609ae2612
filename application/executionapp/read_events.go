package executionapp

import (
	"context"
	"fmt"

	"github.com/yukta/yukta/domain/fault"
)

// ReadEvents returns committed events after a position, for live streams.
type ReadEvents struct{ reader Reader }

// NewReadEvents returns the use case.
func NewReadEvents(r Reader) *ReadEvents { return &ReadEvents{reader: r} }

// MaxEventBatch caps one read.
const MaxEventBatch = 500

// Check confirms that an execution stream may be opened: the execution must
// belong to the session (the same not-found either way).
func (uc *ReadEvents) Check(ctx context.Context, sessionID, executionID string) error {
	_, err := uc.reader.Execution(ctx, sessionID, executionID)
	return err
}

// CheckPosition refuses a resume position (q.AfterSeq) that names no event
// the caller may see: resuming from it would silently replay the whole
// history. q.Sessions is the caller's scope (nil: every session). A seq of
// another session's event is refused exactly as a seq of no event, in the
// same words, so a session-limited caller learns nothing about events
// outside its sessions from the answer.
func (uc *ReadEvents) CheckPosition(ctx context.Context, q EventQuery) error {
	if q.AfterSeq == 0 {
		return nil
	}
	if q.AfterSeq < 0 {
		return badPosition(q.AfterSeq)
	}
	ok, err := uc.reader.EventExists(ctx, q.AfterSeq, q.Sessions)
	if err != nil {
		return err
	}
	if !ok {
		return badPosition(q.AfterSeq)
	}
	return nil
}

// badPosition is the one refusal of a resume position, whatever the reason.
func badPosition(seq int64) error {
	return &fault.ValidationError{Subject: "event stream", Violations: []fault.Violation{{Path: "header.Last-Event-ID",
		Message: fmt.Sprintf("no event you may read has seq %d; send the id of the last event you received, or omit the header to read from the start", seq)}}}
}

// Handle reads the next events.
func (uc *ReadEvents) Handle(ctx context.Context, q EventQuery) ([]StoredEvent, error) {
	if q.AfterSeq < 0 {
		return nil, badPosition(q.AfterSeq)
	}
	if q.Limit <= 0 || q.Limit > MaxEventBatch {
		q.Limit = MaxEventBatch
	}
	return uc.reader.Events(ctx, q)
}
