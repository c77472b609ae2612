package executionapp

import (
	"context"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// TaskLogInput is log lines a worker sends for the task it holds.
type TaskLogInput struct {
	Worker     Worker
	TaskID     string
	LeaseToken string
	Lines      []LogLine
}

// AppendTaskLogs adds a worker's lines to the run's log under the task's
// node, masked like every line.
type AppendTaskLogs struct {
	engine *Engine
	leases TaskLeases
}

// NewAppendTaskLogs returns the use case.
func NewAppendTaskLogs(e *Engine, leases TaskLeases) *AppendTaskLogs {
	return &AppendTaskLogs{engine: e, leases: leases}
}

// Handle appends and returns how many lines it stored.
func (uc *AppendTaskLogs) Handle(ctx context.Context, in TaskLogInput) (int, error) {
	if len(in.Lines) == 0 || len(in.Lines) > MaxTaskLines {
		return 0, fault.Newf(fault.ErrInvalid, "lines must hold 1 to %d lines, got %d", MaxTaskLines, len(in.Lines))
	}
	for i, l := range in.Lines {
		switch l.Level {
		case "", "debug", "info", "warn", "error":
		default:
			return 0, fault.Newf(fault.ErrInvalid, "lines[%d].level %q is not a level; use debug, info, warn or error", i, l.Level)
		}
		if strings.TrimSpace(l.Message) == "" {
			return 0, fault.Newf(fault.ErrInvalid, "lines[%d].message is empty; send the text to log", i)
		}
	}
	l, err := findLease(ctx, uc.leases, in.Worker, in.TaskID, in.LeaseToken)
	if err != nil {
		return 0, err
	}
	r, err := uc.engine.runs.get(ctx, l.ExecutionID)
	if err != nil {
		return 0, err
	}
	now := uc.engine.now()
	err = uc.engine.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		first, err := st.Executions.NextLogSeqs(ctx, map[string]int{l.ExecutionID: len(in.Lines)})
		if err != nil {
			return err
		}
		entries := make([]LogEntry, len(in.Lines))
		for i, line := range in.Lines {
			level := line.Level
			if level == "" {
				level = "info"
			}
			msg := jsonvalue.Cut(jsonvalue.Clean(r.mask(line.Message)), uc.engine.cfg.Limits.MaxLogLineBytes)
			entries[i] = LogEntry{ExecutionID: l.ExecutionID, Seq: first[l.ExecutionID] + int64(i), At: now, Level: level, NodeID: l.NodeID, Message: msg}
		}
		return st.Logs.Append(ctx, entries)
	})
	if err != nil {
		return 0, err
	}
	return len(in.Lines), nil
}
