package executionapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// ReviewGate holds the commands a supervisor reviews (the supervisor
// runtime's reviews): Control and StartExecution ask it before they apply
// anything. A command no supervisor reviews passes at once.
type ReviewGate interface {
	// Open opens a review of the command when a supervisor reviews it, and
	// returns its ticket with held = true; held = false means nobody
	// reviews it and the caller goes ahead. The same key from the same
	// session returns the review already open for it.
	Open(ctx context.Context, r Reviewable) (t ReviewTicket, held bool, err error)
	// Wait blocks up to d for the review to settle, and returns it as it
	// stands then.
	Wait(ctx context.Context, reviewID string, d time.Duration) (ReviewTicket, error)
}

// Reviewable is a command as the gate sees it: where it acts and the
// door's request, replayed through Control.Reviewed (or
// StartExecution.Reviewed) when its review allows it. Exactly one of
// Control and Start is set.
type Reviewable struct {
	SessionID   string
	WorkflowID  string // for a start or a STOP_ALL; the gate finds a run's own
	ExecutionID string
	NodeID      string
	Command     execution.Command // for Control
	Control     *ControlRequest
	Start       *StartInput
}

// ReviewTicket is a held command as its sender sees it.
type ReviewTicket struct {
	ReviewID string
	// Status is the review's status (PENDING, AWAITING_APPROVAL, ALLOWED,
	// APPLIED, DENIED).
	Status   string
	Asking   string // the supervisor asked now
	Deadline time.Time
	Message  string
	// Settled is set once nothing more happens: Applied holds the outcome
	// of an applied command, Denied the error of a denied one.
	Settled bool
	Applied *ReviewOutcome
	Denied  error
}

// ReviewOutcome is what applying a reviewed command gave: a control
// command's result, or a started run.
type ReviewOutcome struct {
	CommandID          string   `json:"commandId,omitempty"`
	Status             string   `json:"status,omitempty"`
	Message            string   `json:"message,omitempty"`
	ResultExecutionIDs []string `json:"resultExecutionIds,omitempty"`
	ExecutionID        string   `json:"executionId,omitempty"`
	// Refused is the error text when the run's state refused the command
	// by the time it was allowed (a run that finished meanwhile).
	Refused string `json:"refused,omitempty"`
}
