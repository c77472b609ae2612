package supervisorapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// The outbox event types of reviews. Both are decision records in the
// journal of the run the command acts on (journalapp).
const (
	// EventReviewRequested: a supervisor is asked for its verdict on a
	// command (the first reviewer, the next one, or a parent).
	EventReviewRequested = "ReviewRequested"
	// EventReviewDecided: a verdict, a timeout's default, an ADMIN's
	// approval or rejection, or the command's application.
	EventReviewDecided = "ReviewDecided"
)

// ReviewStore keeps reviews. Every change appends its events in the same
// transaction.
type ReviewStore interface {
	// OpenReview stores a new review with its events. When the session
	// already has a review of r's key (a non-empty key), nothing is stored
	// and that review is returned with created = false.
	OpenReview(ctx context.Context, r supervisor.Review, events []executionapp.Event) (stored supervisor.Review, created bool, err error)
	// ChangeReview locks a review, calls change with it and stores what
	// change returns, with its events, in one transaction (change may run
	// again on a retried transaction). A fence, when given, must be the
	// supervisor's current lease (ErrLeaseLost otherwise). A review that
	// does not exist is supervisor.ErrReviewNotFound.
	ChangeReview(ctx context.Context, id string, fence *Fence,
		change func(supervisor.Review) (supervisor.Review, []executionapp.Event, error)) (supervisor.Review, error)
	// Review returns a review; ok is false when none has the id.
	Review(ctx context.Context, id string) (r supervisor.Review, ok bool, err error)
	// Reviews lists reviews, newest first.
	Reviews(ctx context.Context, q ReviewQuery) ([]supervisor.Review, error)
	// DueReviews returns the ids of PENDING reviews past their deadline and
	// of ALLOWED reviews untouched for longer than stale (their applier
	// died), at most limit.
	DueReviews(ctx context.Context, stale time.Duration, limit int) ([]string, error)
}

// ReviewQuery filters a review list.
type ReviewQuery struct {
	// Statuses keeps reviews in one of them (all when empty).
	Statuses []supervisor.ReviewStatus
	// Sessions keeps reviews of these sessions (all when nil).
	Sessions []string
	Limit    int
}

// WorkflowCounter counts a workflow's unfinished runs (PENDING, RUNNING,
// PAUSED): workflow.activeCount of review rules.
type WorkflowCounter interface {
	ActiveCount(ctx context.Context, sessionID, workflowID string) (int, error)
}

// ReviewedController applies a control command its review allowed
// (*executionapp.Control).
type ReviewedController interface {
	Reviewed(ctx context.Context, r executionapp.ControlRequest) (executionapp.ControlResult, error)
}

// ReviewedStarter starts a run its review allowed
// (*executionapp.StartExecution).
type ReviewedStarter interface {
	Reviewed(ctx context.Context, in executionapp.StartInput) (executionapp.StartResult, error)
}

// ReviewConfig is how reviews behave on this server.
type ReviewConfig struct {
	// Timeout is how long each asked supervisor has to answer (default
	// DefaultReviewTimeout).
	Timeout time.Duration
	// Default is the decision a review takes when the asked supervisor
	// times out, or every supervisor up the chain has no opinion (default
	// REQUIRE_APPROVAL: a person decides).
	Default supervisor.Decision
}

// DefaultReviewTimeout is the review timeout when none is configured.
const DefaultReviewTimeout = 30 * time.Second

func (c ReviewConfig) withDefaults() ReviewConfig {
	if c.Timeout <= 0 {
		c.Timeout = DefaultReviewTimeout
	}
	if !c.Default.Final() {
		c.Default = supervisor.RequireApproval
	}
	return c
}
