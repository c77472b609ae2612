package httpapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/execution"
)

type fixedScheduler struct{ st executionapp.SchedulerStatus }

func (f fixedScheduler) Handle(context.Context) (executionapp.SchedulerStatus, error) {
	return f.st, nil
}

// TestGetSchedulerStatus: the handler answers the status in its wire form,
// and, like /metrics, refuses a session-limited key.
func TestGetSchedulerStatus(t *testing.T) {
	t.Parallel()
	oldest := time.Date(2026, 5, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	h := &handlers{uc: UseCases{Scheduler: fixedScheduler{executionapp.SchedulerStatus{
		Slots:   execution.Slots{MaxRunning: 10, Reserved: 2},
		Running: executionapp.PoolCounts{Normal: 10, Reserved: 1}, Waiting: executionapp.PoolCounts{Normal: 4},
		OldestWaiting: oldest,
		Scopes: []executionapp.ScopeStatus{{SessionID: "s", MaxRunning: 5, Running: 5, Waiting: 4},
			{SessionID: "s", WorkflowID: "w", MaxRunning: 2, Running: 2, Waiting: 4}},
	}}}}
	viewer, err := access.NewPrincipal("v", access.Viewer, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.GetSchedulerStatus(authn.WithPrincipal(context.Background(), viewer), restapi.GetSchedulerStatusRequestObject{})
	if err != nil {
		t.Fatal(err)
	}
	got := restapi.SchedulerStatus(res.(restapi.GetSchedulerStatus200JSONResponse))
	if got.MaxRunning != 10 || got.ReservedSupervisorSlots != 2 || got.Running != (restapi.SchedulerPools{Total: 11, Normal: 10, Reserved: 1}) ||
		got.Waiting != (restapi.SchedulerPools{Total: 4, Normal: 4}) || !got.OldestWaitingSince.Equal(oldest) || got.OldestWaitingSince.Location() != time.UTC ||
		len(got.Scopes) != 2 || got.Scopes[1] != (restapi.SchedulerScope{SessionId: "s", WorkflowId: "w", MaxRunning: 2, Running: 2, Waiting: 4}) {
		t.Fatalf("got %+v", got)
	}
	limited, err := access.NewPrincipal("dash", access.Viewer, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.GetSchedulerStatus(authn.WithPrincipal(context.Background(), limited), restapi.GetSchedulerStatusRequestObject{})
	if !errors.Is(err, access.ErrForbidden) || !strings.Contains(err.Error(), "cannot read the scheduler status") {
		t.Fatalf("a session-limited key: got %v, want a 403", err)
	}
}
