package supervisorapp

import (
	"context"
	"fmt"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// MaxAgentLogLines caps the log lines one agent read returns (and is the
// default).
const MaxAgentLogLines = 200

// LogTailer reads a run's newest log lines, secret values removed
// (*executionapp.TailLogs).
type LogTailer interface {
	Handle(context.Context, executionapp.TailInput) (executionapp.TailResult, error)
}

// ReadAgentLogs answers an agent's read of the newest log lines of a run of
// its units (REST GET /executions/{id}/logs, MCP get_execution_logs).
type ReadAgentLogs struct {
	runs RunDirectory
	tail LogTailer
}

// NewReadAgentLogs returns the use case.
func NewReadAgentLogs(runs RunDirectory, tail LogTailer) *ReadAgentLogs {
	return &ReadAgentLogs{runs: runs, tail: tail}
}

// AgentLogsInput names the run and how many lines (0: MaxAgentLogLines).
type AgentLogsInput struct {
	Supervisor  supervisor.Supervisor
	ExecutionID string
	Tail        int
}

// Handle returns the lines, oldest first.
func (uc *ReadAgentLogs) Handle(ctx context.Context, in AgentLogsInput) (executionapp.TailResult, error) {
	n := in.Tail
	switch {
	case n == 0:
		n = MaxAgentLogLines
	case n < 0 || n > MaxAgentLogLines:
		return executionapp.TailResult{}, &fault.ValidationError{Subject: "request", Violations: []fault.Violation{{Path: "tail",
			Message: fmt.Sprintf("must be an integer from 1 to %d, got %d", MaxAgentLogLines, in.Tail)}}}
	}
	r, err := ownedRun(ctx, uc.runs, in.Supervisor, in.ExecutionID)
	if err != nil {
		return executionapp.TailResult{}, err
	}
	res, err := uc.tail.Handle(ctx, executionapp.TailInput{SessionID: r.SessionID, ExecutionID: r.ID, TailLines: n})
	if err != nil {
		return executionapp.TailResult{}, err
	}
	res.ExecutionID = r.ID
	return res, nil
}
