package mcpserver

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

// holdsServer is newTestServer with the hold use cases wired as bootstrap
// wires them, over the test's database.
func holdsServer(t *testing.T) (*httptest.Server, *testEnv) {
	t.Helper()
	e := newEnv(t)
	rt := postgres.NewSupervisorRuntime(e.pool)
	e.deps.ListHolds = supervisorapp.NewListHolds(rt, rt)
	e.deps.ReleaseHold = supervisorapp.NewReleaseHold(postgres.NewSupervisorTransactor(e.pool), e.deps.Control, time.Now)
	h, err := New(e.deps, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(authenticated(t, h))
	t.Cleanup(ts.Close)
	return ts, e
}

// hold records that supervisor sid holds the run (as its Hold directive
// does, without the pause).
func hold(t *testing.T, e *testEnv, sid, executionID string) {
	t.Helper()
	_, err := postgres.NewSupervisorRuntime(e.admin).ChangeHolds(context.Background(), executionID,
		func(h supervisor.RunHolds, s execution.Status) (supervisor.RunHolds, error) {
			next, _, err := h.Hold(sid, "looking at it", time.Now(), s)
			return next, err
		})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHoldTools: a VIEWER lists a run's holds; an ADMIN releases one with a
// reason, journaled in the run (HoldReleased, the ADMIN as actor, channel
// mcp); releasing a hold that is not there names who holds the run and
// points to list_holds; an OPERATOR may not release.
func TestHoldTools(t *testing.T) {
	t.Parallel()
	ts, e := holdsServer(t)
	applySupervisors(t, e)
	hold(t, e, "guard", e.liveExec)
	hold(t, e, "ops", e.liveExec)
	viewer := connect(t, ts.URL, secretOf("viewer"))
	admin := connect(t, ts.URL, secretOf("admin"))

	var list HoldsOut
	decode(t, callOK(t, viewer, "list_holds", map[string]any{"sessionId": "own", "executionId": e.liveExec}), &list)
	if len(list.Holds) != 2 || list.Holds[0].SupervisorID != "guard" || list.Holds[0].Reason != "looking at it" || !strings.Contains(list.Next, "release_hold") {
		t.Fatalf("list_holds: %+v", list)
	}
	if res := call(t, viewer, "list_holds", map[string]any{"sessionId": "foreign", "executionId": e.liveExec}); !res.IsError ||
		!strings.Contains(text(res), "Execution not found") {
		t.Errorf("list_holds in another session: %q", text(res))
	}

	var rel ReleaseHoldOut
	decode(t, callOK(t, admin, "release_hold", map[string]any{"sessionId": "own", "executionId": e.liveExec, "supervisorId": "guard", "reason": "guard is gone"}), &rel)
	if rel.Resumed || len(rel.Holds) != 1 || rel.Holds[0].SupervisorID != "ops" || rel.HoldReason != "looking at it" || !strings.Contains(rel.Next, "still hold") {
		t.Fatalf("release_hold: %+v", rel)
	}
	var typ, actor, channel, reason string
	err := e.admin.QueryRow(t.Context(), `SELECT type, actor, channel, data->>'reason' FROM events WHERE execution_id = $1::uuid AND type = $2`,
		e.liveExec, supervisorapp.EventHoldReleased).Scan(&typ, &actor, &channel, &reason)
	if err != nil || actor != "key:admin" || channel != Channel || reason != "guard is gone" {
		t.Fatalf("the HoldReleased event: %v %s %s %s", err, actor, channel, reason)
	}

	res := call(t, admin, "release_hold", map[string]any{"sessionId": "own", "executionId": e.liveExec, "supervisorId": "guard"})
	if !res.IsError || !strings.Contains(text(res), `supervisor "guard" does not hold execution`) || !strings.Contains(text(res), `held by supervisor "ops"`) ||
		!strings.Contains(text(res), "list_holds") {
		t.Errorf("release a hold that is not there: %q", text(res))
	}
	if res := call(t, connect(t, ts.URL, secretOf("operator")), "release_hold", map[string]any{"sessionId": "own", "executionId": e.liveExec, "supervisorId": "ops"}); !res.IsError ||
		!strings.HasPrefix(text(res), "Forbidden") {
		t.Errorf("an OPERATOR's release_hold: %q", text(res))
	}
	var n int
	_ = e.admin.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE type = $1`, supervisorapp.EventHoldReleased).Scan(&n)
	if n != 1 {
		t.Errorf("%d HoldReleased events, want the one release", n)
	}
}
