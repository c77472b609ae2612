// Package sessionapp holds the use cases on sessions and their workflows:
// apply (create or replace), read, list and delete. It owns the ports those
// use cases need; adapters implement them.
package sessionapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/session"
)

// SessionStore keeps sessions. Implementations translate storage errors to
// fault kinds; Get, Workflow and Delete report session.ErrSessionNotFound or
// session.ErrWorkflowNotFound.
type SessionStore interface {
	Get(ctx context.Context, id string) (session.Session, error)
	// GetForUpdate is Get that also locks the session until the transaction
	// ends, so two applies of one session cannot interleave.
	GetForUpdate(ctx context.Context, id string) (session.Session, error)
	// Put creates or replaces s and its workflows; workflows s no longer has
	// are removed and returned.
	Put(ctx context.Context, s session.Session, ch Change) (created bool, removed []string, err error)
	Delete(ctx context.Context, id string) error
	// List returns a page of sessions in id order, each with its workflows'
	// summaries, read with the page in one query.
	List(ctx context.Context, q ListQuery) ([]Summary, error)
	Workflow(ctx context.Context, sessionID, workflowID string) (session.Workflow, error)
}

// ListQuery selects a page of sessions: those after the id After, at most
// Limit; Only, when not nil, keeps just those ids; Text, when not empty,
// keeps those whose id, name or description contains it, ignoring case.
type ListQuery struct {
	After string
	Limit int
	Only  []string
	Text  string
}

// Summary is a session in a list, with when, by whom and through which
// channel it was last applied, and its workflows in document order.
type Summary struct {
	session.Summary
	UpdatedAt             time.Time
	UpdatedBy, UpdatedVia string
	Workflows             []WorkflowSummary
}

// WorkflowSummary is a workflow in a list: its size, its pause (nil when
// it is not paused) and its newest run (nil when it has none).
type WorkflowSummary struct {
	ID        string
	NodeCount int
	Pause     *execution.WorkflowPause
	Last      *LastExecution
}

// LastExecution is a workflow's newest run, by start.
type LastExecution struct {
	ID                 string
	Status             execution.Status
	StartedAt, EndedAt time.Time
}

// Change is who changes a session, when, and through which door.
type Change struct {
	At             time.Time
	Actor, Channel string
}

// Audit records session changes as events of the outbox, in the caller's
// transaction, so the event stream shows who applied or deleted what.
type Audit interface {
	SessionChanged(ctx context.Context, typ, sessionID string, ch Change, data map[string]any) error
}

// The session event types.
const (
	EventSessionApplied = "SessionApplied"
	EventSessionDeleted = "SessionDeleted"
)

// Stores are the stores bound to one transaction.
type Stores struct {
	Sessions SessionStore
	Audit    Audit
}

// Transactor runs fn in one database transaction: it commits when fn returns
// nil and rolls back otherwise. fn may run more than once (serialization
// retries), so it must do nothing but storage work.
type Transactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, s Stores) error) error
}
