package supervisorapp_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"

	"github.com/yukta/yukta/adapters/metrics"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// loopWorld is the loop guard over the real store: runs written with the
// origin a directive would have given them, each with one event.
type loopWorld struct {
	pool    *pgxpool.Pool
	store   *postgres.SupervisorRuntime
	metrics *metrics.Metrics
	limits  []string // what OnLimit heard: "supervisor/limit"
}

func newLoopWorld(t *testing.T) *loopWorld {
	t.Helper()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(t.Context(), `INSERT INTO sessions (session_id, name, created_at, updated_at) VALUES ('ci', 'ci', now(), now())`); err != nil {
		t.Fatal(err)
	}
	return &loopWorld{pool: pool, store: postgres.NewSupervisorRuntime(pool), metrics: metrics.New(metrics.Options{})}
}

func (w *loopWorld) guard(b supervisor.LoopBounds) *supervisorapp.LoopGuard {
	return supervisorapp.NewLoopGuard(supervisorapp.LoopGuardDeps{Store: w.store, Bounds: b, Metrics: w.metrics,
		OnLimit: func(id, limit string, _ error) { w.limits = append(w.limits, id+"/"+limit) }})
}

// run writes a run of ci/flaky at depth, caused by by, with one event, and
// returns its id and the event's cursor.
func (w *loopWorld) run(t *testing.T, depth int, by string) (id, cursor string) {
	t.Helper()
	var seq int64
	var xid uint64
	err := w.pool.QueryRow(t.Context(), `
		WITH x AS (INSERT INTO executions (execution_id, session_id, workflow_id, status, definition, actor, channel, started_at, cause_depth, caused_by)
		           VALUES (gen_random_uuid(), 'ci', 'flaky', 'FAILURE', '{}', 'key:test', 'rest', now(), $1, $2) RETURNING execution_id)
		INSERT INTO events (at, type, session_id, workflow_id, execution_id, actor, data)
		SELECT now(), 'ExecutionStatusChanged', 'ci', 'flaky', execution_id, 'engine', '{"status":"FAILURE"}' FROM x
		RETURNING execution_id::text, seq, xid::text::numeric::bigint`, depth, by).Scan(&id, &seq, &xid)
	if err != nil {
		t.Fatal(err)
	}
	return id, supervisor.FormatCursor(supervisor.Position{XID: xid, Seq: seq})
}

func (w *loopWorld) notices(t *testing.T, supervisorID, limit string) int {
	t.Helper()
	var n int
	if err := w.pool.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE type = $1 AND session_id = ''
		AND data->>'supervisorId' = $2 AND data->>'limit' = $3`, supervisorapp.EventSupervisorLimitReached, supervisorID, limit).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// refusals reads yukta_supervisor_loop_refusals_total for a supervisor
// and limit from the real registry.
func (w *loopWorld) refusals(t *testing.T, supervisorID, limit string) float64 {
	t.Helper()
	fams, err := w.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "yukta_supervisor_loop_refusals_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "supervisor") == supervisorID && label(m, "limit") == limit {
				return m.GetCounter().GetValue()
			}
		}
	}
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

func loopDirective(t *testing.T, key, cause, command string) supervisor.Directive {
	t.Helper()
	d, err := supervisor.ParseDirective(fmt.Appendf(nil, `{"key":%q,"cause":%q,"command":%s}`, key, cause, command))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLoopGuardDepth: a run a directive starts is one deeper than the run
// of the event it reacts to, or than the run it restarts, whichever is
// deeper; past the bound it is refused, naming the depth, the origin and
// the flag, with one notice and one log per window and every refusal in
// the metric. Commands that start no run are never refused for depth.
func TestLoopGuardDepth(t *testing.T) {
	w := newLoopWorld(t)
	g := w.guard(supervisor.LoopBounds{MaxDepth: 3, CommandsPerMinute: 100})
	ctx := t.Context()
	byHand, byHandEvent := w.run(t, 0, "")
	o, err := g.Admit(ctx, "fixer", loopDirective(t, "k1", byHandEvent, `{"type":"RestartWorkflow","target":"execution:`+byHand+`"}`))
	if err != nil || o.Depth != 1 || o.Supervisor != "fixer" {
		t.Fatalf("a restart of a run started by hand: %+v %v, want depth 1 by fixer", o, err)
	}
	deep, deepEvent := w.run(t, 3, "other")
	// The cause says depth 1; the run it restarts says 4: the deeper wins.
	_, err = g.Admit(ctx, "fixer", loopDirective(t, "k2", byHandEvent, `{"type":"RestartWorkflow","target":"execution:`+deep+`"}`))
	if !errors.Is(err, supervisor.ErrLoopTooDeep) || !errors.Is(err, supervisor.ErrDirectiveRefused) {
		t.Fatalf("a restart of a depth-3 run: %v, want ErrLoopTooDeep", err)
	}
	for _, want := range []string{"causal depth 4", "bound 3", "execution " + deep, `caused by supervisor "other" at depth 3`,
		"--supervisor-max-depth", "YUKTA_SUPERVISOR_MAX_DEPTH", fmt.Sprint(supervisor.MaxLoopDepth)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	_, err = g.Admit(ctx, "fixer", loopDirective(t, "k3", deepEvent, `{"type":"StartWorkflow","target":"workflow:ci/flaky"}`))
	deepPos, perr := supervisor.ParseCursor(deepEvent)
	if perr != nil {
		t.Fatal(perr)
	}
	if !errors.Is(err, supervisor.ErrLoopTooDeep) || !strings.Contains(err.Error(), fmt.Sprintf("event %d ", deepPos.Seq)) {
		t.Fatalf("a start caused by an event of a depth-3 run: %v", err)
	}
	// A pause of the deep run starts nothing: only the budget counts it.
	if o, err := g.Admit(ctx, "fixer", loopDirective(t, "k4", deepEvent, `{"type":"PauseWorkflow","target":"execution:`+deep+`"}`)); err != nil || o.Depth != 0 {
		t.Fatalf("a pause of a deep run: %+v %v, want admitted with no origin", o, err)
	}
	if n := w.notices(t, "fixer", supervisor.LimitDepth); n != 1 {
		t.Errorf("%d SupervisorLimitReached (depth) events after two refusals, want 1", n)
	}
	if v := w.refusals(t, "fixer", supervisor.LimitDepth); v != 2 {
		t.Errorf("the metric counted %v depth refusals, want 2", v)
	}
	if len(w.limits) != 1 || w.limits[0] != "fixer/depth" {
		t.Errorf("OnLimit heard %v, want [fixer/depth]", w.limits)
	}
	// A workflow supervisor's deciding run is bounded the same way.
	if o, err := g.AdmitRun(ctx, "decider", byHandEvent); err != nil || o.Depth != 1 {
		t.Fatalf("a deciding run for a depth-0 event: %+v %v", o, err)
	}
	if _, err := g.AdmitRun(ctx, "decider", deepEvent); !errors.Is(err, supervisor.ErrLoopTooDeep) {
		t.Fatalf("a deciding run for a depth-3 event: %v, want ErrLoopTooDeep", err)
	}
	// A cause that is not an event (a tick slot) adds nothing.
	if o, err := g.AdmitRun(ctx, "decider", "tick:42"); err != nil || o.Depth != 1 {
		t.Fatalf("a deciding run for a tick: %+v %v, want depth 1", o, err)
	}
}

// TestLoopGuardBudget: each supervisor sends at most its budget per
// window, counted in the database so two guards (two instances) share it;
// the one past the budget tells the supervisor once (notice, log), every
// refusal counts in the metric, and a new window admits again.
func TestLoopGuardBudget(t *testing.T) {
	w := newLoopWorld(t)
	b := supervisor.LoopBounds{MaxDepth: supervisor.DefaultLoopDepth, CommandsPerMinute: 3}
	one, two := w.guard(b), w.guard(b)
	ctx := t.Context()
	id, _ := w.run(t, 0, "")
	pause := func(g *supervisorapp.LoopGuard, sup, key string) error {
		_, err := g.Admit(ctx, sup, loopDirective(t, key, "", `{"type":"PauseWorkflow","target":"execution:`+id+`"}`))
		return err
	}
	for i, g := range []*supervisorapp.LoopGuard{one, two, one} {
		if err := pause(g, "busy", fmt.Sprint("k", i)); err != nil {
			t.Fatalf("directive %d of a budget of 3: %v", i+1, err)
		}
	}
	for i, g := range []*supervisorapp.LoopGuard{two, one, two} {
		err := pause(g, "busy", fmt.Sprint("over", i))
		if !errors.Is(err, supervisor.ErrBudgetExceeded) || !errors.Is(err, supervisor.ErrDirectiveRefused) {
			t.Fatalf("directive %d past the budget: %v, want ErrBudgetExceeded", i+1, err)
		}
		for _, want := range []string{`supervisor "busy"`, "budget of 3", "--supervisor-commands-per-minute", "YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not say %q", err, want)
			}
		}
	}
	if err := pause(one, "calm", "k"); err != nil {
		t.Fatalf("another supervisor's budget is its own: %v", err)
	}
	if n := w.notices(t, "busy", supervisor.LimitBudget); n != 1 {
		t.Errorf("%d SupervisorLimitReached (budget) events, want 1", n)
	}
	if v := w.refusals(t, "busy", supervisor.LimitBudget); v != 3 {
		t.Errorf("the metric counted %v budget refusals, want 3", v)
	}
	if len(w.limits) != 1 || w.limits[0] != "busy/budget" {
		t.Errorf("OnLimit heard %v, want [busy/budget] once", w.limits)
	}
	// The window ends: the budget is whole again, and the next notice is
	// the next window's.
	if _, err := w.pool.Exec(ctx, `UPDATE supervisor_budgets SET window_start = window_start - interval '61 seconds' WHERE supervisor_id = 'busy'`); err != nil {
		t.Fatal(err)
	}
	if err := pause(two, "busy", "later"); err != nil {
		t.Fatalf("the first directive of a new window: %v", err)
	}
}
