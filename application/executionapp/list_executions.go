package executionapp

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// ListExecutions pages through a session's executions, newest first.
type ListExecutions struct{ reader Reader }

// NewListExecutions returns the use case.
func NewListExecutions(r Reader) *ListExecutions { return &ListExecutions{reader: r} }

// HistoryPage is one page of history.
type HistoryPage struct {
	Executions []ExecutionSummary
	NextCursor string
}

// Handle validates the query and returns one page.
func (uc *ListExecutions) Handle(ctx context.Context, q HistoryQuery, cursor string) (HistoryPage, error) {
	var vs []fault.Violation
	switch {
	case q.Limit == 0:
		q.Limit = 50
	case q.Limit < 1 || q.Limit > 500:
		vs = append(vs, fault.Violation{Path: "limit", Message: fmt.Sprintf("must be between 1 and 500, got %d", q.Limit)})
	}
	if q.Status != "" && !q.Status.Valid() {
		vs = append(vs, fault.Violation{Path: "status", Message: fmt.Sprintf("%q is not an execution status; use one of %v", q.Status, execution.Statuses)})
	}
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(b) != 36 {
			vs = append(vs, fault.Violation{Path: "cursor", Message: "is not a cursor this server issued; pass the nextCursor of the previous page or omit it"})
		}
		q.After = string(b)
	}
	if len(vs) > 0 {
		return HistoryPage{}, &fault.ValidationError{Subject: "history request", Violations: vs}
	}
	limit := q.Limit
	q.Limit++
	rows, err := uc.reader.History(ctx, q)
	if err != nil {
		return HistoryPage{}, err
	}
	page := HistoryPage{Executions: rows}
	if len(rows) > limit {
		page.Executions = rows[:limit]
		page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(rows[limit-1].ID))
	}
	return page, nil
}
