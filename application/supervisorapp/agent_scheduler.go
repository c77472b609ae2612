package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// SchedulerReader reads the scheduler's limits and queue
// (*executionapp.GetSchedulerStatus).
type SchedulerReader interface {
	Handle(context.Context) (executionapp.SchedulerStatus, error)
}

// ReadAgentScheduler answers an agent's read of the scheduler (REST GET
// /scheduler, MCP get_scheduler), for a supervisor that owns the server
// only: the answer counts every session's work.
type ReadAgentScheduler struct{ sched SchedulerReader }

// NewReadAgentScheduler returns the use case.
func NewReadAgentScheduler(sched SchedulerReader) *ReadAgentScheduler {
	return &ReadAgentScheduler{sched: sched}
}

// Handle returns the status, or ErrForbidden.
func (uc *ReadAgentScheduler) Handle(ctx context.Context, sup supervisor.Supervisor) (executionapp.SchedulerStatus, error) {
	for _, u := range sup.Owns() {
		if u.Kind() == supervisor.UnitServer {
			return uc.sched.Handle(ctx)
		}
	}
	return executionapp.SchedulerStatus{}, fault.Newf(fault.ErrForbidden,
		"supervisor %s does not own the server; the scheduler status counts the work of every session", sup.ID())
}
