package supervisorapp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// Page bounds of a refusal list.
const (
	DefaultRefusalPage = 50
	MaxRefusalPage     = 500
)

// StoredRefusal is a rejected ledger entry with its place in the
// supervisor's trail (Seq, increasing) and when it was refused.
type StoredRefusal struct {
	Seq   int64
	At    time.Time
	Entry LedgerEntry
}

// RefusalStore reads a supervisor's refusals: its rejected ledger entries.
type RefusalStore interface {
	// Refusals returns up to limit refusals of the supervisor, newest
	// first, each with a Seq below before (before <= 0: from the newest).
	Refusals(ctx context.Context, supervisorID string, before int64, limit int) ([]StoredRefusal, error)
}

// Refusal is one directive the intake refused: the sender's own record of
// it. Refusals are never written into the runs a directive named, so a
// supervisor cannot write into runs it does not own; one request is at
// most one refusal (the same key again is the same refusal).
type Refusal struct {
	SupervisorID string
	Key          string
	At           time.Time
	Channel      string
	// Directive is the directive as it was sent (its wire form).
	Directive json.RawMessage
	// Kind is the refusal's kind (refused, tooManyRuns, notFound,
	// conflict, invalid); Message says why and what to do.
	Kind    string
	Message string
}

// RefusalsInput asks for one page of a supervisor's refusals.
type RefusalsInput struct {
	SupervisorID string
	// Limit is the page size (0: DefaultRefusalPage).
	Limit int
	// Cursor is the NextCursor of the previous page ("": the newest).
	Cursor string
}

// RefusalPage is one page, newest first; NextCursor is "" on the last.
type RefusalPage struct {
	Refusals   []Refusal
	NextCursor string
}

// ListRefusals reads a supervisor's refusals, for ADMINs (REST) and for the
// supervisor itself (the agent API).
type ListRefusals struct {
	sups  Reader
	store RefusalStore
}

// NewListRefusals returns the use case.
func NewListRefusals(sups Reader, store RefusalStore) *ListRefusals {
	return &ListRefusals{sups: sups, store: store}
}

// Handle returns one page. An unknown supervisor is not found; a bad limit
// or cursor is invalid, naming the field.
func (uc *ListRefusals) Handle(ctx context.Context, in RefusalsInput) (RefusalPage, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultRefusalPage
	case limit < 0 || limit > MaxRefusalPage:
		return RefusalPage{}, pageViolation("limit", fmt.Sprintf("must be between 1 and %d, got %d", MaxRefusalPage, in.Limit))
	}
	var before int64
	if in.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(in.Cursor)
		n, perr := strconv.ParseInt(string(b), 10, 64)
		if err != nil || perr != nil || n <= 0 {
			return RefusalPage{}, pageViolation("cursor", "is not a cursor this server issued; pass the nextCursor of the previous page or omit it to start at the newest")
		}
		before = n
	}
	if _, err := uc.sups.Supervisor(ctx, in.SupervisorID); err != nil {
		return RefusalPage{}, err
	}
	rows, err := uc.store.Refusals(ctx, in.SupervisorID, before, limit+1)
	if err != nil {
		return RefusalPage{}, err
	}
	page := RefusalPage{Refusals: make([]Refusal, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(rows[i-1].Seq, 10)))
			break
		}
		var res DirectiveResult
		if err := json.Unmarshal(r.Entry.Result, &res); err != nil {
			return RefusalPage{}, fmt.Errorf("supervisorapp: stored result of %s/%s: %w", r.Entry.SupervisorID, r.Entry.Key, err)
		}
		page.Refusals = append(page.Refusals, Refusal{SupervisorID: r.Entry.SupervisorID, Key: r.Entry.Key, At: r.At, Channel: r.Entry.Channel,
			Directive: json.RawMessage(r.Entry.Directive), Kind: res.Refusal, Message: res.Message})
	}
	return page, nil
}

func pageViolation(path, msg string) error {
	return &fault.ValidationError{Subject: "refusal list", Violations: []fault.Violation{{Path: path, Message: msg}}}
}
