package executionapp

import (
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// Errors callers branch on.
var (
	// ErrExecutionNotFound is the same for an unknown id and for an id that
	// belongs to another session, so ids cannot be probed across sessions.
	ErrExecutionNotFound = fmt.Errorf("executionapp: execution not found: %w", fault.ErrNotFound)
	ErrNodeNotFound      = fmt.Errorf("executionapp: node not found: %w", fault.ErrNotFound)
	ErrInputNotFound     = fmt.Errorf("executionapp: input not found: %w", fault.ErrNotFound)
	// ErrKeyReused: an idempotency key comes back with a different request
	// than its first use. Answering the first use's result would hide that
	// the new request did nothing.
	ErrKeyReused = fmt.Errorf("executionapp: idempotency key reused for a different request: %w", fault.ErrConflict)
)

// ErrExecutionDeleted is the not-found of a run the retention policy
// deleted; it matches ErrExecutionNotFound too.
var ErrExecutionDeleted = fmt.Errorf("executionapp: execution deleted by the retention policy: %w", ErrExecutionNotFound)

// Tombstone is what is left of a run the retention policy deleted.
type Tombstone struct {
	ExecutionID, WorkflowID, Status string
	EndedAt, DeletedAt              time.Time
	RetentionDays                   int
	JournalKept, Exported           bool
}

// DeletedExecution is the not-found error for a run the retention policy
// deleted: it says so, and when, instead of a bare "not found".
func DeletedExecution(t Tombstone) error {
	journal := "Its journal was kept: it can still be exported and verified."
	switch {
	case !t.JournalKept && t.Exported:
		journal = "Its journal was deleted with it, after it was exported to the server's retention export folder."
	case !t.JournalKept:
		journal = "Its journal was deleted with it."
	}
	return fault.Newf(ErrExecutionDeleted,
		"execution %s was deleted by the retention policy on %s: it ended %s on %s, and finished runs of its session are kept %d days. %s",
		t.ExecutionID, t.DeletedAt.UTC().Format("2006-01-02 15:04:05Z"), t.Status, t.EndedAt.UTC().Format("2006-01-02"),
		t.RetentionDays, journal)
}
