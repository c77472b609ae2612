package executionapp

import (
	"context"

	"github.com/yukta/yukta/domain/execution"
)

// SpendReader reads what an execution's completed tasks reported, outside a
// transaction.
type SpendReader interface {
	// TaskSpend returns the spend report of every TaskCompleted event of
	// the execution, oldest first (none for a run without TASK nodes).
	TaskSpend(ctx context.Context, executionID string) ([]execution.SpendReport, error)
}

// GetExecution reads the live status of one execution of a session, with
// the spend its workers reported.
type GetExecution struct {
	reader Reader
	spend  SpendReader
}

// NewGetExecution returns the use case.
func NewGetExecution(r Reader, s SpendReader) *GetExecution {
	return &GetExecution{reader: r, spend: s}
}

// Handle returns the execution, or ErrExecutionNotFound (identical for an
// unknown id and for one of another session). Its Spend is the run's
// TaskCompleted events folded by execution.FoldSpend, the fold the journal
// projection uses; it is read just after the status, so a task completed
// in between may be in the spend and not yet in the node's counts.
func (uc *GetExecution) Handle(ctx context.Context, sessionID, id string) (ExecutionView, error) {
	v, err := uc.reader.Execution(ctx, sessionID, id)
	if err != nil {
		return v, err
	}
	reports, err := uc.spend.TaskSpend(ctx, v.ID)
	if err != nil {
		return ExecutionView{}, err
	}
	s := execution.FoldSpend(reports)
	v.Spend = &s
	return v, nil
}
