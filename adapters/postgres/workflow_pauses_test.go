package postgres_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

func (i *schedInstance) workflowCommand(t *testing.T, action execution.Action, reason string) (executionapp.ControlResult, error) {
	t.Helper()
	return i.control.Handle(t.Context(), executionapp.ControlRequest{SessionID: "limits", WorkflowID: "hold",
		Scope: execution.ScopeWorkflow, Action: string(action), Reason: reason, Actor: "key:ops", Channel: "rest"})
}

func countRuns(t *testing.T, i *schedInstance, status string) int {
	t.Helper()
	var n int
	if err := i.pool.QueryRow(t.Context(), `SELECT count(*) FROM executions WHERE workflow_id = 'hold' AND ($1 = '' OR status = $1)`, status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// skipCount reads yukta_starts_skipped_total{source,reason=workflow_paused}.
func skipCount(t *testing.T, m *metrics.Metrics, source string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "yukta_starts_skipped_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			if label(s, "source") == source && label(s, "reason") == executionapp.SkipWorkflowPaused {
				return s.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("yukta_starts_skipped_total{source=%q} is not exported", source)
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A workflow paused through one instance refuses starts and restarts on
// another (the pause is in the database), with the pause's facts, and
// writes no run; an idempotent replay still answers its run; a second
// pause keeps the first; RESUME_WORKFLOW resumes the runs the pause paused
// (not one paused on its own) and lets starts through again.
func TestWorkflowPauseAcrossInstances(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	a, b := newSchedInstance(t, dsn, "a", execution.Slots{}), newSchedInstance(t, dsn, "b", execution.Slots{})
	m := metrics.New(metrics.Options{})
	b.start.UseSkips(m)
	applyLimits(t, a.pool, limitsDoc("", ""))
	keyed, err := a.start.Handle(t.Context(), executionapp.StartInput{SessionID: "limits", WorkflowID: "hold", IdempotencyKey: "k1",
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	own := a.startRun(t, "hold", execution.PoolNormal).ExecutionID
	if _, err := a.control.Handle(t.Context(), executionapp.ControlRequest{SessionID: "limits", ExecutionID: own,
		Scope: execution.ScopeExecution, Action: "PAUSE", Actor: "someone", Channel: "rest"}); err != nil {
		t.Fatal(err)
	}

	res, err := a.workflowCommand(t, execution.ActionPauseWorkflow, "charge keeps failing")
	if err != nil || res.Status != executionapp.CommandApplied || len(res.ResultExecutionIDs) != 1 || res.ResultExecutionIDs[0] != keyed.ExecutionID {
		t.Fatalf("pause: %+v %v (want the one running run %s)", res, err, keyed.ExecutionID)
	}
	wantStatuses(t, a.pool, []string{keyed.ExecutionID, own}, "PAUSED", "PAUSED")
	runs := countRuns(t, a, "")

	_, err = b.start.Handle(t.Context(), executionapp.StartInput{SessionID: "limits", WorkflowID: "hold",
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "mcp"})
	p, ok := execution.IsPaused(err)
	if !ok || !errors.Is(err, fault.ErrConflict) || p.Actor != "key:ops" || p.Channel != "rest" || p.Reason != "charge keeps failing" || p.Since.IsZero() {
		t.Fatalf("start on b: %v (%+v)", err, p)
	}
	if got := countRuns(t, a, ""); got != runs {
		t.Fatalf("a refused start wrote a run: %d runs, were %d", got, runs)
	}
	if got := skipCount(t, m, "manual"); got != 1 {
		t.Errorf("manual skips = %v, want 1", got)
	}
	replay, err := b.start.Handle(t.Context(), executionapp.StartInput{SessionID: "limits", WorkflowID: "hold", IdempotencyKey: "k1",
		Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
	if err != nil || replay.ExecutionID != keyed.ExecutionID || replay.Created {
		t.Fatalf("idempotent replay while paused: %+v %v", replay, err)
	}
	_, err = b.control.Handle(t.Context(), executionapp.ControlRequest{SessionID: "limits", ExecutionID: keyed.ExecutionID,
		Scope: execution.ScopeExecution, Action: "RESTART", Actor: "test", Channel: "rest"})
	if _, ok := execution.IsPaused(err); !ok || !strings.Contains(err.Error(), "nothing was restarted") {
		t.Fatalf("restart while paused: %v", err)
	}
	if got := countRuns(t, a, ""); got != runs {
		t.Fatalf("a refused restart wrote a run: %d runs, were %d", got, runs)
	}

	again, err := b.workflowCommand(t, execution.ActionPauseWorkflow, "another reason")
	if err != nil || !strings.HasPrefix(again.Message, "workflow hold was already paused by key:ops since ") {
		t.Fatalf("second pause: %+v %v", again, err)
	}
	if _, err := b.start.Handle(t.Context(), executionapp.StartInput{SessionID: "limits", WorkflowID: "hold",
		Trigger: executionapp.TriggerManual}); err == nil || !strings.Contains(err.Error(), `reason "charge keeps failing"`) {
		t.Fatalf("the second pause replaced the first: %v", err)
	}

	res, err = b.workflowCommand(t, execution.ActionResumeWorkflow, "")
	if err != nil || len(res.ResultExecutionIDs) != 1 || res.ResultExecutionIDs[0] != keyed.ExecutionID {
		t.Fatalf("resume: %+v %v", res, err)
	}
	wantStatuses(t, a.pool, []string{keyed.ExecutionID, own}, "RUNNING", "PAUSED")
	if r := b.startRun(t, "hold", execution.PoolNormal); !r.Created {
		t.Fatalf("start after the resume: %+v", r)
	}
	if res, err := a.workflowCommand(t, execution.ActionResumeWorkflow, ""); err != nil || res.Message != "workflow hold is not paused; nothing was changed" {
		t.Fatalf("resume of a workflow that is not paused: %+v %v", res, err)
	}
}

// Starts racing a pause: every start either committed its run before the
// pause (and the pause paused it) or was refused. No run of the workflow is
// left RUNNING once the pause and the starts are done.
func TestWorkflowPauseRacesStarts(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	a, b := newSchedInstance(t, dsn, "a", execution.Slots{}), newSchedInstance(t, dsn, "b", execution.Slots{})
	applyLimits(t, a.pool, limitsDoc("", ""))
	const starters, perStarter = 6, 15
	var started, refused atomic.Int64
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for range starters {
		wg.Go(func() {
			<-begin
			for range perStarter {
				_, err := b.start.Handle(t.Context(), executionapp.StartInput{SessionID: "limits", WorkflowID: "hold",
					Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
				switch _, paused := execution.IsPaused(err); {
				case err == nil:
					started.Add(1)
				case paused:
					refused.Add(1)
				default:
					t.Errorf("start: %v", err)
				}
			}
		})
	}
	close(begin)
	for deadline := time.Now().Add(30 * time.Second); countRuns(t, a, "") < 3; time.Sleep(time.Millisecond) { // the pause lands among the starts
		if time.Now().After(deadline) {
			t.Fatal("no run started within 30 s")
		}
	}
	res, err := a.workflowCommand(t, execution.ActionPauseWorkflow, "race")
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := countRuns(t, a, "RUNNING"); n != 0 {
		t.Fatalf("%d run(s) RUNNING after the pause: a start slipped past it (%d started, %d refused, the pause paused %d)",
			n, started.Load(), refused.Load(), len(res.ResultExecutionIDs))
	}
	if got := int64(len(res.ResultExecutionIDs)); got != started.Load() || refused.Load() == 0 {
		t.Fatalf("the pause paused %d runs, %d were started and %d refused", got, started.Load(), refused.Load())
	}
}

// Removing a paused workflow from the session keeps its pause: re-added
// with the same id it is still paused, and RESUME_WORKFLOW lifts the pause
// of a workflow no longer in the session (then, neither paused nor there,
// it is not found). Deleting the session deletes its pauses.
func TestWorkflowPauseOutlivesTheWorkflow(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	a := newSchedInstance(t, dsn, "a", execution.Slots{})
	withHold, withoutHold := limitsDoc("", ""), []byte(`{"name":"limits","workflows":[{"workflowId":"quick","nodes":[
		{"nodeId":"start","type":"MANUAL"},{"nodeId":"out","type":"RESULT"}],"edges":[{"source":"start","target":"out"}]}]}`)
	applyLimits(t, a.pool, withHold)
	if _, err := a.workflowCommand(t, execution.ActionPauseWorkflow, "gone for now"); err != nil {
		t.Fatal(err)
	}
	applyLimits(t, a.pool, withoutHold)
	applyLimits(t, a.pool, withHold)
	if _, err := a.start.Handle(t.Context(), executionapp.StartInput{SessionID: "limits", WorkflowID: "hold",
		Trigger: executionapp.TriggerManual}); !errors.Is(err, execution.ErrWorkflowPaused) {
		t.Fatalf("start of the re-added workflow: %v, want it still paused", err)
	}
	applyLimits(t, a.pool, withoutHold)
	if res, err := a.workflowCommand(t, execution.ActionResumeWorkflow, ""); err != nil || !strings.HasPrefix(res.Message, "workflow hold resumed") {
		t.Fatalf("resume of a removed workflow: %+v %v", res, err)
	}
	if _, err := a.workflowCommand(t, execution.ActionResumeWorkflow, ""); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("resume of a removed workflow that is not paused: %v, want not found", err)
	}
	applyLimits(t, a.pool, withHold)
	if _, err := a.workflowCommand(t, execution.ActionPauseWorkflow, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.pool.Exec(t.Context(), `DELETE FROM sessions WHERE session_id = 'limits'`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := a.pool.QueryRow(t.Context(), `SELECT count(*) FROM workflow_pauses`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d pauses left after the session was deleted (%v)", n, err)
	}
}
