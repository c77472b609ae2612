package httpapi

import (
	"context"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/retention"
	"github.com/yukta/yukta/domain/session"
)

// GetSchedulerStatus answers GET /api/scheduler. It counts the work of every
// session, so, like /metrics, a session-limited key is refused.
func (h *handlers) GetSchedulerStatus(ctx context.Context, _ restapi.GetSchedulerStatusRequestObject) (restapi.GetSchedulerStatusResponseObject, error) {
	if err := authorizeScoped(ctx, "getSchedulerStatus"); err != nil {
		return nil, err
	}
	if h.uc.Scheduler == nil {
		return nil, fault.Newf(fault.ErrNotFound, "the scheduler status is not enabled on this server")
	}
	st, err := h.uc.Scheduler.Handle(ctx)
	if err != nil {
		return nil, err
	}
	return restapi.GetSchedulerStatus200JSONResponse(SchedulerStatusToAPI(st)), nil
}

// SchedulerStatusToAPI is the wire form of the scheduler status.
func SchedulerStatusToAPI(st executionapp.SchedulerStatus) restapi.SchedulerStatus {
	out := restapi.SchedulerStatus{
		MaxRunning: st.Slots.MaxRunning, ReservedSupervisorSlots: st.Slots.Reserved,
		Running:   restapi.SchedulerPools{Total: st.Running.Total(), Normal: st.Running.Normal, Reserved: st.Running.Reserved},
		Waiting:   restapi.SchedulerPools{Total: st.Waiting.Total(), Normal: st.Waiting.Normal, Reserved: st.Waiting.Reserved},
		Scopes:    make([]restapi.SchedulerScope, len(st.Scopes)),
		Truncated: st.Truncated,
	}
	if !st.OldestWaiting.IsZero() {
		out.OldestWaitingSince = st.OldestWaiting.UTC()
	}
	for i, sc := range st.Scopes {
		out.Scopes[i] = restapi.SchedulerScope{SessionId: sc.SessionID, WorkflowId: sc.WorkflowID, MaxRunning: sc.MaxRunning,
			Running: sc.Running, Waiting: sc.Waiting}
	}
	out.Queues = make([]restapi.TaskQueueStatus, len(st.Queues))
	for i, q := range st.Queues {
		tq := restapi.TaskQueueStatus{Queue: q.Queue, Waiting: q.Waiting, Leased: q.Leased, Workers: make([]restapi.TaskWorkerSeen, len(q.Workers))}
		if !q.OldestWaiting.IsZero() {
			tq.OldestWaitingSince = q.OldestWaiting.UTC()
		}
		for j, w := range q.Workers {
			tq.Workers[j] = restapi.TaskWorkerSeen{Worker: w.Worker, LastSeen: w.LastSeen.UTC()}
		}
		out.Queues[i] = tq
	}
	return out
}

func limitsToAPI(l session.Limits) restapi.Limits {
	return restapi.Limits{MaxRunning: l.MaxRunning}
}

// retentionToAPI gives back the parts of a session's retention it set, so
// the document reads back as it was applied.
func retentionToAPI(r retention.Override) restapi.SessionRetention {
	var out restapi.SessionRetention
	if d, set := r.Days(); set {
		out.Days = &d
	}
	out.Journals = restapi.SessionRetentionJournals(r.Journals())
	return out
}
