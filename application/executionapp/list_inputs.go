package executionapp

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// InputQuery selects inputs: of one session (or every session when
// SessionID is empty), of one execution when ExecutionID is set.
type InputQuery struct {
	SessionID, ExecutionID string
	// Sessions, when not nil, keeps only inputs of these sessions (a
	// session-limited key listing across sessions). The store filters
	// before it caps the list, so other sessions' inputs never crowd out
	// the caller's or show in how many it gets.
	Sessions []string
	// OnlyOpen hides answered and cancelled inputs.
	OnlyOpen bool
	// Limit is the page size (1–500; 0 is DefaultInputPage); Cursor the
	// NextCursor of the previous page.
	Limit  int
	Cursor string
	// AfterAt and AfterID are the position Cursor names (the last input of
	// the previous page); the use case fills them for the store, which
	// reads on after them in (created, id) order.
	AfterAt time.Time
	AfterID string
}

// DefaultInputPage and MaxInputPage bound a page of inputs.
const (
	DefaultInputPage = 100
	MaxInputPage     = 500
)

// InputPage is one page of inputs, oldest first; NextCursor is empty on
// the last page.
type InputPage struct {
	Inputs     []Input
	NextCursor string
}

// ListInputs lists inputs of a session (or of one execution), a page at a
// time: inputs pile up without bound while nobody answers them.
type ListInputs struct{ reader Reader }

// NewListInputs returns the use case.
func NewListInputs(r Reader) *ListInputs { return &ListInputs{reader: r} }

// Handle validates the query and returns one page, oldest first.
func (uc *ListInputs) Handle(ctx context.Context, q InputQuery) (InputPage, error) {
	var vs []fault.Violation
	switch {
	case q.Limit == 0:
		q.Limit = DefaultInputPage
	case q.Limit < 1 || q.Limit > MaxInputPage:
		vs = append(vs, fault.Violation{Path: "limit", Message: fmt.Sprintf("must be between 1 and %d, got %d", MaxInputPage, q.Limit)})
	}
	if q.Cursor != "" {
		at, id, ok := decodeInputCursor(q.Cursor)
		if !ok {
			vs = append(vs, fault.Violation{Path: "cursor", Message: "is not a cursor this server issued; pass the nextCursor of the previous page or omit it"})
		}
		q.AfterAt, q.AfterID = at, id
	}
	if len(vs) > 0 {
		return InputPage{}, &fault.ValidationError{Subject: "input list request", Violations: vs}
	}
	if q.ExecutionID != "" {
		if _, err := uc.reader.Execution(ctx, q.SessionID, q.ExecutionID); err != nil {
			return InputPage{}, err
		}
	}
	limit := q.Limit
	q.Limit++
	rows, err := uc.reader.Inputs(ctx, q)
	if err != nil {
		return InputPage{}, err
	}
	page := InputPage{Inputs: rows}
	if len(rows) > limit {
		page.Inputs = rows[:limit]
		last := rows[limit-1]
		page.NextCursor = encodeInputCursor(last.CreatedAt, last.ID)
	}
	return page, nil
}

// An input cursor is the last input's creation time and id, opaque to
// clients (base64url of "<RFC 3339 time>|<id>").
func encodeInputCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(at.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodeInputCursor(c string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", false
	}
	ts, id, ok := strings.Cut(string(b), "|")
	at, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil || len(id) != 36 {
		return time.Time{}, "", false
	}
	return at, id, true
}
