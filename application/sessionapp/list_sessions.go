package sessionapp

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// Paging bounds for ListSessions.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// ListSessions pages through sessions in id order.
type ListSessions struct{ store SessionStore }

// NewListSessions returns the use case.
func NewListSessions(s SessionStore) *ListSessions { return &ListSessions{store: s} }

// ListInput selects a page. Cursor is the NextCursor of the previous page.
type ListInput struct {
	Limit  int
	Cursor string
	// Only, when not nil, lists just these sessions (a session-limited key).
	Only []string
	// Query, when not empty, keeps the sessions whose id, name or
	// description contains it, ignoring case.
	Query string
}

// MaxQueryLen bounds ListInput.Query, in characters.
const MaxQueryLen = 200

// ListResult is one page; NextCursor is empty on the last page.
type ListResult struct {
	Sessions   []Summary
	NextCursor string
}

// Handle returns one page of sessions.
func (uc *ListSessions) Handle(ctx context.Context, in ListInput) (ListResult, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 0 || limit > MaxPageSize:
		return ListResult{}, &fault.ValidationError{Subject: "list request", Violations: []fault.Violation{{
			Path: "limit", Message: fmt.Sprintf("must be between 1 and %d, got %d", MaxPageSize, in.Limit)}}}
	}
	if in.Query != "" {
		if v, ok := checkQuery(in.Query); !ok {
			return ListResult{}, &fault.ValidationError{Subject: "list request", Violations: []fault.Violation{v}}
		}
	}
	after := ""
	if in.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(in.Cursor)
		if err != nil || !session.ValidID(string(b)) {
			return ListResult{}, &fault.ValidationError{Subject: "list request", Violations: []fault.Violation{{
				Path: "cursor", Message: "is not a cursor this server issued; pass the nextCursor of the previous page or omit it to start over"}}}
		}
		after = string(b)
	}
	// One extra row tells whether another page exists without a count query.
	rows, err := uc.store.List(ctx, ListQuery{After: after, Limit: limit + 1, Only: in.Only, Text: in.Query})
	if err != nil {
		return ListResult{}, fmt.Errorf("list sessions: %w", err)
	}
	res := ListResult{Sessions: rows}
	if len(rows) > limit {
		res.Sessions = rows[:limit]
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(rows[limit-1].ID))
	}
	return res, nil
}

// checkQuery refuses a search text the store could not take or that no
// session could contain.
func checkQuery(q string) (fault.Violation, bool) {
	switch {
	case !utf8.ValidString(q) || strings.ContainsRune(q, 0):
		return fault.Violation{Path: "q", Message: "must be UTF-8 text without U+0000"}, false
	case utf8.RuneCountInString(q) > MaxQueryLen:
		return fault.Violation{Path: "q", Message: fmt.Sprintf("must be at most %d characters, got %d", MaxQueryLen, utf8.RuneCountInString(q))}, false
	}
	return fault.Violation{}, true
}
