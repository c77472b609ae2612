package postgres_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestDirectivesCarryTheirDepth: through the intake with the loop guard, a
// restart of a run started by hand starts a run at depth 1 caused by the
// supervisor (on the row and in its ExecutionStarted event), a restart of
// that one depth 2, and past the bound the restart is refused before any
// effect and without a ledger entry, so the key stays free.
func TestDirectivesCarryTheirDepth(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "fixer", `{"name":"Fixer","engine":{"type":"http","settings":{}},"owns":["session:ci"],"allowedCommands":["RestartWorkflow"]}`)
	loops := supervisorapp.NewLoopGuard(supervisorapp.LoopGuardDeps{Store: f.store, Bounds: supervisor.LoopBounds{MaxDepth: 2, CommandsPerMinute: 100}})
	submit := supervisorapp.NewSubmitDirective(supervisorapp.SubmitDeps{Supervisors: f.sups, Ledger: f.store, Runs: f.store, Holds: f.store,
		Control: f.control, Start: f.exec.start, Answer: executionapp.NewAnswerInput(postgres.NewExecutionTransactor(f.pool), nil, f.exec.engine, time.Now),
		Loops: loops, Now: time.Now})
	run := f.startRun(t, "ci", true)
	f.waitStatus(t, "FAILURE", run)
	restart := func(key, id string) (supervisorapp.DirectiveResult, error) {
		return submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "fixer", Channel: "agent",
			Directive: svDirective(t, fmt.Sprintf(`{"key": %q, "command": {"type": "RestartWorkflow", "target": "execution:%s"}}`, key, id))})
	}
	for depth := 1; depth <= 2; depth++ {
		res, err := restart(fmt.Sprint("again-", depth), run)
		if err != nil || len(res.Outcomes) != 1 || len(res.Outcomes[0].ResultExecutionIDs) != 1 {
			t.Fatalf("restart to depth %d: %+v %v", depth, res, err)
		}
		run = res.Outcomes[0].ResultExecutionIDs[0]
		if n := f.count(t, `SELECT count(*) FROM executions WHERE execution_id = $1 AND cause_depth = $2 AND caused_by = 'fixer'`, run, depth); n != 1 {
			t.Fatalf("run %s is not at depth %d caused by fixer", run, depth)
		}
		if n := f.count(t, `SELECT count(*) FROM events WHERE execution_id = $1 AND type = 'ExecutionStarted'
			AND (data->>'depth')::int = $2 AND data->>'causedBy' = 'fixer'`, run, depth); n != 1 {
			t.Fatalf("the ExecutionStarted of %s does not name depth %d and fixer", run, depth)
		}
		f.waitStatus(t, "FAILURE", run)
	}
	runs := f.count(t, `SELECT count(*) FROM executions`)
	res, err := restart("again-3", run)
	if !errors.Is(err, supervisor.ErrLoopTooDeep) || res.Status != supervisorapp.DirectiveRejected || res.Message != err.Error() {
		t.Fatalf("restart to depth 3 past the bound 2: %+v %v", res, err)
	}
	if n := f.count(t, `SELECT count(*) FROM executions`); n != runs {
		t.Fatalf("the refused restart started a run: %d runs, were %d", n, runs)
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_directives WHERE key = 'again-3'`); n != 0 {
		t.Fatalf("the refused restart left %d ledger entries; its key should stay free", n)
	}
}
