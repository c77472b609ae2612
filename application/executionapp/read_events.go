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

// CheckPosition refuses a resume position that names no event: resuming
// from it would silently replay the whole history.
func (uc *ReadEvents) CheckPosition(ctx context.Context, seq int64) error {
	if seq == 0 {
		return nil
	}
	ok, err := uc.reader.EventExists(ctx, seq)
	if err != nil {
		return err
	}
	if !ok {
		return &fault.ValidationError{Subject: "event stream", Violations: []fault.Violation{{Path: "header.Last-Event-ID",
			Message: fmt.Sprintf("no event has seq %d; send the id of the last event you received, or omit the header to read from the start", seq)}}}
	}
	return nil
}

// Handle reads the next events.
func (uc *ReadEvents) Handle(ctx context.Context, q EventQuery) ([]StoredEvent, error) {
	if q.AfterSeq < 0 {
		return nil, &fault.ValidationError{Subject: "event stream", Violations: []fault.Violation{{Path: "Last-Event-ID", Message: fmt.Sprintf("must be a seq from this stream, got %d", q.AfterSeq)}}}
	}
	if q.Limit <= 0 || q.Limit > MaxEventBatch {
		q.Limit = MaxEventBatch
	}
	return uc.reader.Events(ctx, q)
}
