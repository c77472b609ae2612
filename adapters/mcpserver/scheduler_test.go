package mcpserver

import (
	"context"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
)

// fixedScheduler answers one status.
type fixedScheduler struct{ st executionapp.SchedulerStatus }

func (f fixedScheduler) Handle(context.Context) (executionapp.SchedulerStatus, error) {
	return f.st, nil
}

// TestBusStatusShowsTheScheduler: get_control_bus_status has the scheduler
// limits and queue under health for a key that sees every session, and
// leaves them out for a session-limited key (they count every session's
// runs, as GET /api/scheduler does).
func TestBusStatusShowsTheScheduler(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	oldest := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	env.deps.Scheduler = fixedScheduler{executionapp.SchedulerStatus{Slots: execution.Slots{MaxRunning: 8, Reserved: 2},
		Running: executionapp.PoolCounts{Normal: 8, Reserved: 1}, Waiting: executionapp.PoolCounts{Normal: 5, Reserved: 1}, OldestWaiting: oldest,
		Queues: []executionapp.TaskQueueStatus{{Queue: "images", Waiting: 3, Leased: 2, OldestWaiting: oldest,
			Workers: []executionapp.WorkerSeen{{Worker: "worker:w1", LastSeen: oldest.Add(time.Minute)}}}}}}
	h, err := New(env.deps, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(authenticated(t, h))
	t.Cleanup(ts.Close)

	var out ControlBusStatus
	decode(t, callOK(t, connect(t, ts.URL, secretOf("viewer")), "get_control_bus_status", map[string]any{"filterType": "health"}), &out)
	want := SchedulerHealth{MaxRunning: 8, ReservedSupervisorSlots: 2, Running: 9, Waiting: 6, WaitingReserved: 1, OldestWaitingSince: "2026-05-01T12:00:00Z",
		TaskQueues: []TaskQueue{{Queue: "images", Waiting: 3, Leased: 2, OldestWaitingSince: "2026-05-01T12:00:00Z",
			Workers: []WorkerSeen{{Worker: "worker:w1", LastSeen: "2026-05-01T12:01:00Z"}}}}}
	if out.Health == nil || out.Health.Scheduler == nil || !reflect.DeepEqual(*out.Health.Scheduler, want) {
		t.Fatalf("health.scheduler for a viewer: got %+v, want %+v", out.Health, want)
	}
	out = ControlBusStatus{}
	decode(t, callOK(t, connect(t, ts.URL, secretOf("limited")), "get_control_bus_status", map[string]any{"filterType": "health"}), &out)
	if out.Health == nil || out.Health.Scheduler != nil {
		t.Fatalf("health for a session-limited key: got %+v, want it without the scheduler", out.Health)
	}
}
