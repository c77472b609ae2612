package supervisorapp

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// Page bounds of an agent's execution list.
const (
	DefaultAgentRunPage = 200
	MaxAgentRunPage     = 500
)

// RunPosition is a place in the order of unfinished runs: start time, then
// id. The zero RunPosition lies before every run.
type RunPosition struct {
	StartedAt time.Time
	ID        string
}

// ActiveRunPager pages through the unfinished runs of units.
type ActiveRunPager interface {
	// ActiveRunsAfter returns up to limit unfinished runs (PENDING,
	// RUNNING, PAUSED) of the units that lie after after, oldest first.
	ActiveRunsAfter(ctx context.Context, units []supervisor.Unit, after RunPosition, limit int) ([]RunInfo, error)
}

// AgentExecutionsInput asks for one page.
type AgentExecutionsInput struct {
	Supervisor supervisor.Supervisor
	// Limit is the page size (0: DefaultAgentRunPage).
	Limit int
	// Cursor is the NextCursor of the previous page ("": the oldest).
	Cursor string
}

// AgentExecutionPage is one page, oldest first; NextCursor is "" on the
// last one, and Truncated says there is more (NextCursor != "").
type AgentExecutionPage struct {
	Runs       []RunInfo
	NextCursor string
	Truncated  bool
}

// ListAgentExecutions answers an agent's list of the unfinished runs of its
// units (REST GET /executions, MCP list_owned_executions), one page at a
// time.
type ListAgentExecutions struct{ runs ActiveRunPager }

// NewListAgentExecutions returns the use case.
func NewListAgentExecutions(runs ActiveRunPager) *ListAgentExecutions {
	return &ListAgentExecutions{runs: runs}
}

// Handle returns one page. A bad limit or cursor is invalid, naming it.
func (uc *ListAgentExecutions) Handle(ctx context.Context, in AgentExecutionsInput) (AgentExecutionPage, error) {
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultAgentRunPage
	case limit < 0 || limit > MaxAgentRunPage:
		return AgentExecutionPage{}, runPageViolation("limit", fmt.Sprintf("must be an integer from 1 to %d, got %d", MaxAgentRunPage, in.Limit))
	}
	var after RunPosition
	if in.Cursor != "" {
		var ok bool
		if after, ok = decodeRunCursor(in.Cursor); !ok {
			return AgentExecutionPage{}, runPageViolation("cursor", "is not a cursor this server gave; pass the nextCursor of the previous page, or leave it out to start at the oldest run")
		}
	}
	page := AgentExecutionPage{Runs: []RunInfo{}}
	owns := in.Supervisor.Owns()
	if len(owns) == 0 {
		return page, nil
	}
	runs, err := uc.runs.ActiveRunsAfter(ctx, owns, after, limit+1)
	if err != nil {
		return AgentExecutionPage{}, err
	}
	if len(runs) > limit {
		runs = runs[:limit]
		last := runs[limit-1]
		page.NextCursor, page.Truncated = encodeRunCursor(RunPosition{StartedAt: last.StartedAt, ID: last.ID}), true
	}
	page.Runs = runs
	return page, nil
}

// A run cursor is base64url("<unix microseconds>.<execution id>"): the
// position of the page's last run (PostgreSQL keeps microseconds).
func encodeRunCursor(p RunPosition) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.StartedAt.UnixMicro(), 10) + "." + p.ID))
}

func decodeRunCursor(c string) (RunPosition, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return RunPosition{}, false
	}
	at, id, ok := strings.Cut(string(b), ".")
	us, perr := strconv.ParseInt(at, 10, 64)
	if !ok || perr != nil || us < 0 || !execution.ValidID(id) {
		return RunPosition{}, false
	}
	return RunPosition{StartedAt: time.UnixMicro(us).UTC(), ID: id}, true
}

func runPageViolation(path, msg string) error {
	return &fault.ValidationError{Subject: "execution list", Violations: []fault.Violation{{Path: path, Message: msg}}}
}
