package supervisorapp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// Bounds of a status read.
const (
	DefaultStatusDirectives = 10
	MaxStatusDirectives     = 100
	// MaxCursorLag caps the lag count, so a supervisor far behind costs a
	// bounded scan of the outbox.
	MaxCursorLag = 100_000
)

// LeaseInfo is a supervisor's lease as stored.
type LeaseInfo struct {
	Owner     string
	ExpiresAt time.Time
	// Live is read on the database's clock: the lease has not expired.
	Live bool
}

// CursorInfo is where a supervisor's engine is in the outbox.
type CursorInfo struct {
	UpdatedAt time.Time
	// Lag is how many committed events follow the cursor, at most
	// MaxCursorLag+1 (more than MaxCursorLag: capped).
	Lag int64
}

// StoredDirective is one ledger entry with when it was received and settled
// (zero while pending).
type StoredDirective struct {
	Entry     LedgerEntry
	At        time.Time
	SettledAt time.Time
}

// RuntimeStatusStore reads what the runtime keeps for a supervisor.
type RuntimeStatusStore interface {
	// LeaseStatus returns the supervisor's lease; ok is false when no instance
	// ever took it.
	LeaseStatus(ctx context.Context, supervisorID string) (LeaseInfo, bool, error)
	// CursorLag returns the supervisor's cursor with the events after it,
	// counted up to limit; ok is false when its engine never moved one.
	CursorLag(ctx context.Context, supervisorID string, limit int64) (CursorInfo, bool, error)
	// RecentDirectives returns its newest ledger entries, newest first.
	RecentDirectives(ctx context.Context, supervisorID string, limit int) ([]StoredDirective, error)
}

// SupervisorState is what a supervisor is doing.
type SupervisorState string

// The states.
const (
	StateRunning  SupervisorState = "running"
	StateIdle     SupervisorState = "idle"
	StateDisabled SupervisorState = "disabled"
)

// DirectiveRecord is a ledger entry as an operator reads it.
type DirectiveRecord struct {
	Key, Status, Channel string
	At, SettledAt        time.Time
	// Directive is the directive as it was sent (its wire form).
	Directive json.RawMessage
	// Message is the intake's answer: why it was refused, what was done.
	Message string
}

// StatusInput names the supervisor and how many directives to list (0:
// DefaultStatusDirectives).
type StatusInput struct {
	SupervisorID string
	Directives   int
}

// Status is a supervisor's runtime status. Lease and Cursor are nil when
// the runtime holds none.
type Status struct {
	SupervisorID   string
	State          SupervisorState
	Lease          *LeaseInfo
	Cursor         *CursorInfo
	LagCapped      bool
	LastDirectives []DirectiveRecord
}

// GetStatus reads a supervisor's runtime status: whether an instance runs
// its engine, how far its cursor lags and its newest directives.
type GetStatus struct {
	sups  Reader
	store RuntimeStatusStore
}

// NewGetStatus returns the use case.
func NewGetStatus(sups Reader, store RuntimeStatusStore) *GetStatus {
	return &GetStatus{sups: sups, store: store}
}

// Handle reads the status. An unknown supervisor is not found; a bad
// directive count is invalid, naming the field.
func (uc *GetStatus) Handle(ctx context.Context, in StatusInput) (Status, error) {
	n := in.Directives
	switch {
	case n == 0:
		n = DefaultStatusDirectives
	case n < 1 || n > MaxStatusDirectives:
		return Status{}, &fault.ValidationError{Subject: "status request", Violations: []fault.Violation{
			{Path: "directives", Message: fmt.Sprintf("must be between 1 and %d, got %d", MaxStatusDirectives, in.Directives)}}}
	}
	sum, err := uc.sups.Supervisor(ctx, in.SupervisorID)
	if err != nil {
		return Status{}, err
	}
	out := Status{SupervisorID: sum.Supervisor.ID(), State: StateIdle, LastDirectives: []DirectiveRecord{}}
	lease, ok, err := uc.store.LeaseStatus(ctx, in.SupervisorID)
	if err != nil {
		return Status{}, err
	}
	if ok {
		out.Lease = &lease
	}
	switch {
	case !sum.Supervisor.Enabled():
		out.State = StateDisabled
	case ok && lease.Live:
		out.State = StateRunning
	}
	cur, ok, err := uc.store.CursorLag(ctx, in.SupervisorID, MaxCursorLag+1)
	if err != nil {
		return Status{}, err
	}
	if ok {
		if cur.Lag > MaxCursorLag {
			cur.Lag, out.LagCapped = MaxCursorLag, true
		}
		out.Cursor = &cur
	}
	rows, err := uc.store.RecentDirectives(ctx, in.SupervisorID, n)
	if err != nil {
		return Status{}, err
	}
	for _, r := range rows {
		var res DirectiveResult
		if len(r.Entry.Result) > 0 && string(r.Entry.Result) != "null" {
			if err := json.Unmarshal(r.Entry.Result, &res); err != nil {
				return Status{}, fmt.Errorf("supervisorapp: stored result of %s/%s: %w", r.Entry.SupervisorID, r.Entry.Key, err)
			}
		}
		out.LastDirectives = append(out.LastDirectives, DirectiveRecord{Key: r.Entry.Key, Status: r.Entry.Status, Channel: r.Entry.Channel,
			At: r.At, SettledAt: r.SettledAt, Directive: json.RawMessage(r.Entry.Directive), Message: res.Message})
	}
	return out, nil
}
