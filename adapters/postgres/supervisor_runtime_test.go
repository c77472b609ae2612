package postgres_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/engines/rulesengine"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// svSession is session "ci": workflow flaky fails its runs started with
// {"fail": true} (node boom) and keeps the others waiting on a DELAY (node
// nap), so a test has failing runs and runs that stay unfinished.
const svSession = `{"name":"ci","workflows":[{"workflowId":"flaky","nodes":[
	{"nodeId":"in","type":"MANUAL"},
	{"nodeId":"gate","type":"FILTER","config":{"condition":"payload.fail == true"}},
	{"nodeId":"boom","type":"FAIL","config":{"message":"down"}},
	{"nodeId":"nap","type":"DELAY","config":{"duration":"120s"}},
	{"nodeId":"out","type":"RESULT"}],
	"edges":[{"source":"in","target":"gate"},{"source":"gate","target":"boom"},{"source":"in","target":"nap"},{"source":"nap","target":"out"}]}]}`

// svFixture is a real engine and the supervisor runtime's pieces over one
// database: the control, start and answer use cases every door uses, the
// supervisor store, the runtime's store and the directive intake.
type svFixture struct {
	pool    *pgxpool.Pool
	exec    *engineFixture
	store   *postgres.SupervisorRuntime
	sups    *postgres.SupervisorStore
	apply   *supervisorapp.ApplySupervisor
	control *executionapp.Control
	submit  *supervisorapp.SubmitDirective
	cond    *cel.Conditions
	redact  *supervisorapp.Redactor
}

func newSVFixture(t *testing.T) *svFixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	f := &svFixture{pool: pool, exec: newEngineFixture(t, pool, "ci", svSession, nil, nil, executionapp.EngineConfig{})}
	f.exec.run(t)
	cat := registry(t)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), cat, time.Now)
	if _, err := apply.Handle(t.Context(), sessionapp.ApplyInput{ID: "other", Document: []byte(strings.Replace(svSession, `"name":"ci"`, `"name":"other"`, 1))}); err != nil {
		t.Fatal(err)
	}
	q, err := postgres.NewQueue(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	tx := postgres.NewExecutionTransactor(pool)
	f.control = executionapp.NewControl(executionapp.ControlDeps{Tx: tx, Workflows: rawWorkflows{postgres.NewSessionStore(pool)}, Queue: q,
		Catalog: cat, Waker: f.exec.engine, Now: time.Now})
	if f.cond, err = cel.NewConditions(); err != nil {
		t.Fatal(err)
	}
	f.store = postgres.NewSupervisorRuntime(pool)
	f.sups = postgres.NewSupervisorStore(pool)
	f.apply = supervisorapp.NewApplySupervisor(postgres.NewSupervisorTransactor(pool), f.cond.Check, time.Now)
	f.redact = supervisorapp.NewRedactor(q, cat)
	f.submit = supervisorapp.NewSubmitDirective(supervisorapp.SubmitDeps{Supervisors: f.sups, Ledger: f.store, Runs: f.store, Holds: f.store,
		Control: f.control, Start: f.exec.start, Answer: executionapp.NewAnswerInput(tx, nil, f.exec.engine, time.Now), Now: time.Now,
		ClaimTTL: 2 * time.Second})
	return f
}

// supervisor stores a supervisor document under id.
func (f *svFixture) supervisor(t *testing.T, id, doc string) {
	t.Helper()
	if _, err := f.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: id, Document: []byte(doc), Actor: "key:admin", Channel: "rest"}); err != nil {
		t.Fatalf("apply supervisor %s: %v", id, err)
	}
}

// startRun starts a run of ci/flaky (or other/flaky) that fails or waits.
func (f *svFixture) startRun(t *testing.T, sessionID string, fail bool) string {
	t.Helper()
	res, err := f.exec.start.Handle(t.Context(), executionapp.StartInput{SessionID: sessionID, WorkflowID: "flaky",
		Payload: map[string]any{"fail": fail}, Trigger: executionapp.TriggerManual, Actor: "key:test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	return res.ExecutionID
}

func (f *svFixture) status(t *testing.T, id string) string {
	t.Helper()
	var s string
	if err := f.pool.QueryRow(t.Context(), `SELECT status FROM executions WHERE execution_id = $1`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *svFixture) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// svEventually polls cond until it holds, failing after timeout with what
// cond last said.
func svEventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStatus waits until every run has the status.
func (f *svFixture) waitStatus(t *testing.T, status string, ids ...string) {
	t.Helper()
	svEventually(t, 30*time.Second, func() (bool, string) {
		for _, id := range ids {
			if s := f.status(t, id); s != status {
				return false, fmt.Sprintf("execution %s is %s, want %s", id, s, status)
			}
		}
		return true, ""
	})
}

// directive parses a directive.
func svDirective(t *testing.T, s string) supervisor.Directive {
	t.Helper()
	d, err := supervisor.ParseDirective([]byte(s))
	if err != nil {
		t.Fatalf("ParseDirective(%s): %v", s, err)
	}
	return d
}

// svRuntime runs a supervisor runtime as owner until the returned stop is
// called (or the test ends). wrap, when set, wraps the engine factories;
// leases and cursors, when set, replace the store's.
type svRuntimeOptions struct {
	wrap    func(supervisorapp.EngineFactory) supervisorapp.EngineFactory
	leases  supervisorapp.LeaseStore
	cursors supervisorapp.CursorStore
	engines map[string]supervisorapp.EngineFactory
	batch   int
}

func (f *svFixture) runtime(t *testing.T, owner string, o svRuntimeOptions) (stop func()) {
	t.Helper()
	rules := rulesengine.NewFactory(rulesengine.Deps{Submit: f.submit, Runs: f.store, Conditions: f.cond, Check: f.cond.Check,
		OnRuleError: func(sid, rid string, err error) { t.Logf("supervisor %s, rule %s: %v", sid, rid, err) }})
	engines := map[string]supervisorapp.EngineFactory{"rules": rules}
	if o.engines != nil {
		engines = o.engines
	}
	if o.wrap != nil {
		for k, v := range engines {
			engines[k] = o.wrap(v)
		}
	}
	var leases supervisorapp.LeaseStore = f.store
	if o.leases != nil {
		leases = o.leases
	}
	var cursors supervisorapp.CursorStore = f.store
	if o.cursors != nil {
		cursors = o.cursors
	}
	rt := supervisorapp.NewRuntime(supervisorapp.RuntimeDeps{Supervisors: f.sups, Leases: leases, Cursors: cursors,
		Events: postgres.NewReader(f.pool), Positions: postgres.NewReader(f.pool), Runs: f.store, Holds: f.store, Redactor: f.redact, Engines: engines, Owner: owner,
		OnError: func(sid string, err error) { t.Logf("runtime %s, supervisor %s: %v", owner, sid, err) },
	}, supervisorapp.RuntimeConfig{LeaseTTL: time.Second, Poll: 20 * time.Millisecond, Rescan: 50 * time.Millisecond, Batch: o.batch})
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); rt.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waitCursor waits until the supervisor has a cursor: from then on it is
// told about every event.
func (f *svFixture) waitCursor(t *testing.T, id string) {
	t.Helper()
	svEventually(t, 10*time.Second, func() (bool, string) {
		_, ok, err := f.store.Cursor(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return ok, "the supervisor has no cursor yet"
	})
}

// waitCaughtUp waits until the supervisor's cursor is at the outbox head.
func (f *svFixture) waitCaughtUp(t *testing.T, id string) {
	t.Helper()
	r := postgres.NewReader(f.pool)
	svEventually(t, 20*time.Second, func() (bool, string) {
		head, err := r.EventHead(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := f.store.Cursor(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := r.Events(t.Context(), executionapp.EventQuery{AfterXID: c.Pos.XID, AfterSeq: c.Pos.Seq, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs) == 0 && head > 0, fmt.Sprintf("cursor %+v, head %d", c.Pos, head)
	})
}

const guardDoc = `{"name":"Guard","engine":{"type":"rules","settings":{"rules":[
	{"id":"pause-on-repeated-failure","when":{"event":"NodeStatusChanged","status":"FAILURE","count":3,"withinSeconds":60},
	 "then":{"command":"PauseWorkflow"}}]}},"owns":["session:ci"]}`

// TestSeedRulePausesTheWorkflowAfterThreeFailures: the seed's example rule
// (pause after three node FAILUREs within 60 s) pauses the unfinished runs
// of the workflow whose node failed, through the control use case, once.
func TestSeedRulePausesTheWorkflowAfterThreeFailures(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "guard", guardDoc)
	f.runtime(t, "a", svRuntimeOptions{})
	f.waitCursor(t, "guard")

	waiting := []string{f.startRun(t, "ci", false), f.startRun(t, "ci", false)}
	f.waitStatus(t, "RUNNING", waiting...)
	for i := 1; i <= 3; i++ {
		failed := f.startRun(t, "ci", true)
		f.waitStatus(t, "FAILURE", failed)
		if i < 3 {
			f.waitCaughtUp(t, "guard")
			for _, id := range waiting {
				if s := f.status(t, id); s != "RUNNING" {
					t.Fatalf("after %d failure(s), execution %s is %s, want RUNNING (the rule needs 3)", i, id, s)
				}
			}
		}
	}
	f.waitStatus(t, "PAUSED", waiting...)

	// PauseWorkflow on the workflow is one workflow command, PAUSE_WORKFLOW,
	// whose result is the runs it paused.
	if n := f.count(t, `SELECT count(*) FROM commands WHERE scope = 'workflow' AND action = 'PAUSE_WORKFLOW' AND actor = 'supervisor:guard'
		AND channel = 'supervisor' AND status = 'applied' AND execution_id IS NULL AND result_execution_ids @> $1::text[]
		AND cardinality(result_execution_ids) = 2`, waiting); n != 1 {
		t.Errorf("PAUSE_WORKFLOW commands of supervisor:guard pausing the waiting runs: got %d, want 1", n)
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'guard' AND status = 'accepted'
		AND key LIKE 'rule:pause-on-repeated-failure:%'`); n != 1 {
		t.Errorf("directives of the rule: got %d, want 1 (the window empties when it fires)", n)
	}
	if n := f.count(t, `SELECT count(*) FROM events WHERE type = 'NodeStatusChanged' AND data->>'to' = 'FAILURE'`); n != 3 {
		t.Errorf("node FAILURE events: got %d, want 3", n)
	}
}

// TestDirectiveKeyIsIdempotent: five concurrent sends of one key have one
// effect and one answer; the key with another directive is refused.
func TestDirectiveKeyIsIdempotent(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "agent", `{"name":"Agent","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`)
	run := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", run)

	send := func(d supervisor.Directive) []supervisorapp.DirectiveResult {
		var wg sync.WaitGroup
		results := make([]supervisorapp.DirectiveResult, 5)
		errs := make([]error, 5)
		for i := range 5 {
			wg.Go(func() {
				results[i], errs[i] = f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "agent", Directive: d, Channel: "agent"})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		return results
	}

	starts := send(svDirective(t, `{"key": "start-once", "command": {"type": "StartWorkflow", "target": "workflow:ci/flaky", "payload": {"fail": false}}}`))
	if n := f.count(t, `SELECT count(*) FROM executions WHERE actor = 'supervisor:agent'`); n != 1 {
		t.Fatalf("runs started by five sends of one key: got %d, want 1", n)
	}
	repeated := 0
	for _, r := range starts {
		if r.Status != supervisorapp.DirectiveAccepted || len(r.Outcomes) != 1 || !slices.Equal(r.Outcomes[0].ResultExecutionIDs, starts[0].Outcomes[0].ResultExecutionIDs) {
			t.Fatalf("answers differ: %+v and %+v", r, starts[0])
		}
		if r.Repeated {
			repeated++
		}
	}
	if repeated < 1 {
		t.Errorf("repeated answers: got %d, want at least one of five marked repeated", repeated)
	}

	pauses := send(svDirective(t, fmt.Sprintf(`{"key": "pause-once", "reason": "hold on", "command": {"type": "PauseWorkflow", "target": "execution:%s"}}`, run)))
	if n := f.count(t, `SELECT count(*) FROM commands WHERE action = 'PAUSE' AND execution_id = $1`, run); n != 1 {
		t.Fatalf("PAUSE commands from five sends of one key: got %d, want 1", n)
	}
	for _, r := range pauses {
		if r.Outcomes[0].CommandID != pauses[0].Outcomes[0].CommandID || r.Outcomes[0].Status != supervisorapp.OutcomeApplied {
			t.Fatalf("answers differ: %+v and %+v", r.Outcomes, pauses[0].Outcomes)
		}
	}
	f.waitStatus(t, "PAUSED", run)

	_, err := f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "agent",
		Directive: svDirective(t, fmt.Sprintf(`{"key": "pause-once", "command": {"type": "StopWorkflow", "target": "execution:%s"}}`, run))})
	if !errors.Is(err, executionapp.ErrKeyReused) {
		t.Fatalf("the key with another directive: got %v, want ErrKeyReused", err)
	}
	if s := f.status(t, run); s != "PAUSED" {
		t.Fatalf("after the refused reuse the run is %s, want PAUSED (nothing applied)", s)
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'agent'`); n != 2 {
		t.Errorf("ledger entries: got %d, want 2", n)
	}
}

// TestDirectiveOutsideAllowedOrOwnedIsRejectedWithTheSender: a command the
// supervisor may not send, and a run outside its units, are refused; each
// refusal is one record in the sender's own trail (ListRefusals: key,
// channel, kind, why, the directive) and no event or journal record of the
// run it named; an accepted directive is journaled through Control's
// command events.
func TestDirectiveOutsideAllowedOrOwnedIsRejectedWithTheSender(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "narrow", `{"name":"Narrow","engine":{"type":"http","settings":{}},"owns":["workflow:ci/flaky"],
		"allowedCommands":["PauseWorkflow"]}`)
	mine, foreign := f.startRun(t, "ci", false), f.startRun(t, "other", false)
	f.waitStatus(t, "RUNNING", mine, foreign)

	cases := []struct {
		name, directive, run string
		has                  string
	}{
		{"a command outside allowedCommands", `{"key": "stop", "cause": "12", "reason": "stuck", "command": {"type": "StopWorkflow", "target": "execution:` + mine + `"}}`,
			mine, `may not send StopWorkflow`},
		{"a run outside the owned units", `{"key": "foreign", "cause": "13", "reason": "noisy", "command": {"type": "PauseWorkflow", "target": "execution:` + foreign + `"}}`,
			foreign, `is outside the units supervisor "narrow" owns`},
		{"a run that does not exist", `{"key": "ghost", "command": {"type": "PauseWorkflow", "target": "execution:0197a3c4-1111-7222-8333-944445555666"}}`,
			"", `is outside the units supervisor "narrow" owns`},
	}
	for _, c := range cases {
		d := svDirective(t, c.directive)
		res, err := f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "narrow", Directive: d})
		if !errors.Is(err, supervisor.ErrDirectiveRefused) || !strings.Contains(err.Error(), c.has) {
			t.Fatalf("%s: got %v, want ErrDirectiveRefused saying %q", c.name, err, c.has)
		}
		if res.Status != supervisorapp.DirectiveRejected {
			t.Fatalf("%s: status %q, want rejected", c.name, res.Status)
		}
		again, err2 := f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "narrow", Directive: d})
		if !errors.Is(err2, supervisor.ErrDirectiveRefused) || !again.Repeated || again.Message != res.Message {
			t.Fatalf("%s sent again: got %+v, %v; want the first refusal, repeated", c.name, again, err2)
		}
		if n := f.count(t, `SELECT count(*) FROM events WHERE type = 'DirectiveRejected'`); n != 0 {
			t.Fatalf("%s: %d DirectiveRejected events, want none: a refusal stays with its sender", c.name, n)
		}
	}
	page, err := supervisorapp.NewListRefusals(f.sups, f.store).Handle(t.Context(), supervisorapp.RefusalsInput{SupervisorID: "narrow"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Refusals) != len(cases) || page.NextCursor != "" {
		t.Fatalf("refusals of narrow: got %+v, want %d (each sent twice, recorded once)", page, len(cases))
	}
	for i, r := range page.Refusals {
		c := cases[len(cases)-1-i] // newest first
		var sent struct{ Key string }
		if r.Key != svDirective(t, c.directive).Key() || r.Channel != supervisorapp.ChannelSupervisor || r.Kind != "refused" ||
			!strings.Contains(r.Message, c.has) || r.At.IsZero() || json.Unmarshal(r.Directive, &sent) != nil || sent.Key != r.Key {
			t.Errorf("refusal %d: got %+v, want %s", i, r, c.name)
		}
	}
	for _, id := range []string{mine, foreign} {
		if s := f.status(t, id); s != "RUNNING" {
			t.Fatalf("execution %s is %s after refused directives, want RUNNING", id, s)
		}
	}
	// The server owner owns every run: a run that does not exist is its
	// directive's rejected outcome, and reaches no journal.
	f.supervisor(t, "root", `{"name":"Root","engine":{"type":"http","settings":{}},"owns":["server"]}`)
	res, err := f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "root",
		Directive: svDirective(t, `{"key": "ghost", "command": {"type": "PauseWorkflow", "target": "execution:no-such-run"}}`)})
	if err != nil || res.Status != supervisorapp.DirectiveAccepted || len(res.Outcomes) != 1 ||
		res.Outcomes[0].Status != supervisorapp.OutcomeRejected || !strings.Contains(res.Outcomes[0].Message, "does not exist") {
		t.Fatalf("the server owner's directive on a missing run: got %+v, %v", res, err)
	}
	accepted := svDirective(t, `{"key": "pause", "cause": "14", "reason": "a quiet hour", "command": {"type": "PauseWorkflow", "target": "execution:`+mine+`"}}`)
	if _, err := f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: "narrow", Directive: accepted}); err != nil {
		t.Fatal(err)
	}
	f.waitStatus(t, "PAUSED", mine)

	// The observer turns the outbox into journals: every directive is a
	// decision record of the run it named.
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := journalapp.NewObserver(postgres.NewJournalTransactor(f.pool), key, time.Now, journalapp.ObserverConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	registerJournalKey(t, f.pool, obs.PublicKey())
	svEventually(t, 30*time.Second, func() (bool, string) {
		if _, err := obs.Step(t.Context()); err != nil {
			t.Fatal(err)
		}
		n := f.count(t, `SELECT count(*) FROM journal_records WHERE kind = 'decision' AND execution_id = ANY ($1::uuid[])`, []string{mine, foreign})
		return n >= 2, fmt.Sprintf("%d decision records", n)
	})
	decisions := func(run string) []map[string]any {
		rows, err := f.pool.Query(t.Context(), `SELECT line FROM journal_records WHERE kind = 'decision' AND execution_id = $1 ORDER BY sequence`, run)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []map[string]any
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			out = append(out, rec["decision"].(map[string]any))
		}
		return out
	}
	var commands int
	for _, d := range decisions(mine) {
		if d["actor"] != "supervisor:narrow" || d["channel"] != "supervisor" {
			t.Errorf("decision %v: want actor supervisor:narrow over channel supervisor", d)
		}
		switch d["type"] {
		case supervisorapp.EventDirectiveRejected:
			t.Errorf("a refusal in the run's journal: %v", d)
		case executionapp.EventCommandAccepted, executionapp.EventCommandApplied:
			commands++
		}
	}
	if commands != 2 {
		t.Errorf("decisions of the owned run: got %d command records, want 2", commands)
	}
	if ds := decisions(foreign); len(ds) != 0 {
		t.Errorf("decisions of the foreign run: got %v, want none", ds)
	}
}

// TestHoldsPauseUntilTheLastRelease: Hold pauses a running run, a resume
// of a held run is refused, and the last Release resumes it.
func TestHoldsPauseUntilTheLastRelease(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	for _, id := range []string{"h1", "h2"} {
		f.supervisor(t, id, `{"name":"Holder","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`)
	}
	run := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", run)
	send := func(sup, body string) (supervisorapp.DirectiveResult, error) {
		return f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: sup, Directive: svDirective(t, body)})
	}
	must := func(res supervisorapp.DirectiveResult, err error) supervisorapp.DirectiveResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	must(send("h1", `{"key": "a", "reason": "waiting for the vendor", "command": {"type": "Hold", "target": "execution:`+run+`"}}`))
	f.waitStatus(t, "PAUSED", run)
	must(send("h2", `{"key": "a", "reason": "audit", "command": {"type": "Hold", "target": "owned.running"}}`))
	res := must(send("h1", `{"key": "resume", "command": {"type": "ResumeWorkflow", "target": "execution:`+run+`"}}`))
	if res.Outcomes[0].Status != supervisorapp.OutcomeRejected || !strings.Contains(res.Outcomes[0].Message, "is held by") {
		t.Fatalf("resume of a held run: got %+v, want it refused naming the holders", res.Outcomes)
	}
	must(send("h1", `{"key": "b", "command": {"type": "Release", "target": "held"}}`))
	if s := f.status(t, run); s != "PAUSED" {
		t.Fatalf("after the first of two releases the run is %s, want PAUSED", s)
	}
	res = must(send("h2", `{"key": "b", "command": {"type": "Release", "target": "execution:`+run+`"}}`))
	f.waitStatus(t, "RUNNING", run)
	if !strings.Contains(res.Outcomes[0].Message, "resumed") {
		t.Errorf("the last release: got %q, want it to say the run resumed", res.Outcomes[0].Message)
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_holds`); n != 0 {
		t.Errorf("holds left: got %d, want 0", n)
	}
	if n := f.count(t, `SELECT count(*) FROM events WHERE type = 'DirectiveApplied' AND execution_id = $1`, run); n != 4 {
		t.Errorf("DirectiveApplied records of the run: got %d, want 4 (two holds, two releases)", n)
	}
}

// handled records which owner handled which event when.
type handled struct {
	mu   sync.Mutex
	seqs map[string][]int64     // owner -> event seqs, in order
	at   map[string][]time.Time // owner -> when each was handled
}

func newHandled() *handled { return &handled{seqs: map[string][]int64{}, at: map[string][]time.Time{}} }

func (h *handled) wrap(owner string) func(supervisorapp.EngineFactory) supervisorapp.EngineFactory {
	return func(next supervisorapp.EngineFactory) supervisorapp.EngineFactory {
		return func(ctx context.Context, sup supervisor.Supervisor, f supervisorapp.Fence, state []byte) (supervisorapp.Engine, error) {
			e, err := next(ctx, sup, f, state)
			if err != nil {
				return nil, err
			}
			return &recordingEngine{Engine: e, owner: owner, h: h}, nil
		}
	}
}

func (h *handled) all() map[int64]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int64]int{}
	for _, seqs := range h.seqs {
		for _, s := range seqs {
			out[s]++
		}
	}
	return out
}

type recordingEngine struct {
	supervisorapp.Engine
	owner string
	h     *handled
}

func (e *recordingEngine) Handle(ctx context.Context, sig supervisor.Signal) error {
	ev, ok := sig.Body().(supervisor.EventSignal)
	if err := e.Engine.Handle(ctx, sig); err != nil || !ok {
		return err
	}
	e.h.mu.Lock()
	e.h.seqs[e.owner] = append(e.h.seqs[e.owner], ev.Seq)
	e.h.at[e.owner] = append(e.h.at[e.owner], time.Now())
	e.h.mu.Unlock()
	return nil
}

// crashingCursors fails the cursor save after n successful ones and then
// "kills" the instance (stops its runtime), as a crash between a
// directive's effect and the cursor's move would.
type crashingCursors struct {
	supervisorapp.CursorStore
	mu   sync.Mutex
	left int
	died chan struct{}
}

func (c *crashingCursors) SaveCursor(ctx context.Context, f supervisorapp.Fence, cur supervisorapp.Cursor) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left == 0 {
		select {
		case <-c.died:
		default:
			close(c.died)
		}
		return errors.New("the instance died")
	}
	c.left--
	return c.CursorStore.SaveCursor(ctx, f, cur)
}

// deadLeases never gives a lease back: the instance died, so another must
// wait for the lease to expire.
type deadLeases struct{ supervisorapp.LeaseStore }

func (deadLeases) Release(context.Context, supervisorapp.Fence) error { return nil }

const pauserDoc = `{"name":"Pauser","engine":{"type":"rules","settings":{"rules":[
	{"id":"pause-new-runs","when":{"event":"ExecutionStarted"},"then":{"command":"PauseWorkflow","reason":"every run starts paused"}}]}},
	"owns":["session:ci"]}`

// TestCursorSurvivesACrash: an instance dies after a directive's effect
// but before its cursor moved; the next instance hands the engine those
// events again (at least once) and each directive has its effect once.
func TestCursorSurvivesACrash(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "pauser", pauserDoc)
	h := newHandled()
	// The first save is the new supervisor's cursor; then a batch of four
	// events at a time.
	crash := &crashingCursors{CursorStore: f.store, left: 3, died: make(chan struct{})}
	stopA := f.runtime(t, "a", svRuntimeOptions{wrap: h.wrap("a"), cursors: crash, leases: deadLeases{f.store}, batch: 4})
	f.waitCursor(t, "pauser")
	var runs []string
	for range 20 {
		runs = append(runs, f.startRun(t, "ci", false))
	}
	select {
	case <-crash.died:
	case <-time.After(20 * time.Second):
		t.Fatal("instance a never reached its crash")
	}
	stopA()
	f.runtime(t, "b", svRuntimeOptions{wrap: h.wrap("b"), batch: 4})
	f.waitStatus(t, "PAUSED", runs...)
	f.waitCaughtUp(t, "pauser")

	if n := f.count(t, `SELECT count(*) FROM commands WHERE action = 'PAUSE' AND actor = 'supervisor:pauser' AND status = 'applied'`); n != len(runs) {
		t.Errorf("PAUSE commands: got %d, want %d (one effect per directive)", n, len(runs))
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'pauser' AND status = 'accepted'`); n != len(runs) {
		t.Errorf("directives: got %d, want %d", n, len(runs))
	}
	all := h.all()
	rows, err := f.pool.Query(t.Context(), `SELECT seq FROM events WHERE type = 'ExecutionStarted' AND session_id = 'ci'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		if all[seq] == 0 {
			t.Errorf("event %d (ExecutionStarted) was never handled", seq)
		}
	}
	again := 0
	for _, n := range all {
		if n > 1 {
			again++
		}
	}
	if again == 0 {
		t.Errorf("no event was handled twice: the crash left nothing to replay, so the test proved nothing")
	}
	if len(h.seqs["a"]) == 0 || len(h.seqs["b"]) == 0 {
		t.Errorf("handled by a: %d, by b: %d; want both", len(h.seqs["a"]), len(h.seqs["b"]))
	}
}

// TestTwoRuntimesFenceASupervisor: two instances on one database; one
// engine at a time handles the supervisor's signals, and when its instance
// dies the other takes over after the lease expires, losing nothing.
func TestTwoRuntimesFenceASupervisor(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "pauser", pauserDoc)
	h := newHandled()
	stops := map[string]func(){}
	for _, owner := range []string{"a", "b"} {
		stops[owner] = f.runtime(t, owner, svRuntimeOptions{wrap: h.wrap(owner), leases: deadLeases{f.store}})
	}
	f.waitCursor(t, "pauser")
	var first []string
	for range 10 {
		first = append(first, f.startRun(t, "ci", false))
	}
	f.waitStatus(t, "PAUSED", first...)
	h.mu.Lock()
	var holder, other string
	switch {
	case len(h.seqs["a"]) > 0 && len(h.seqs["b"]) == 0:
		holder, other = "a", "b"
	case len(h.seqs["b"]) > 0 && len(h.seqs["a"]) == 0:
		holder, other = "b", "a"
	default:
		t.Fatalf("both live instances handled events: a %v, b %v", h.seqs["a"], h.seqs["b"])
	}
	h.mu.Unlock()

	stops[holder]() // dies without giving the lease back
	died := time.Now()
	var second []string
	for range 10 {
		second = append(second, f.startRun(t, "ci", false))
	}
	f.waitStatus(t, "PAUSED", second...)
	f.waitCaughtUp(t, "pauser")

	h.mu.Lock()
	defer h.mu.Unlock()
	for _, at := range h.at[holder] {
		if at.After(died) {
			t.Errorf("instance %s handled an event after it died", holder)
		}
	}
	if len(h.at[other]) == 0 {
		t.Fatalf("instance %s never took over", other)
	}
	if h.at[other][0].Before(died) {
		t.Errorf("instance %s handled an event while %s held the lease", other, holder)
	}
	if n := f.count(t, `SELECT count(*) FROM commands WHERE action = 'PAUSE' AND actor = 'supervisor:pauser'`); n != 20 {
		t.Errorf("PAUSE commands: got %d, want 20", n)
	}
}

// TestLeaseFencesAStaleOwner: once another instance took the lease, the
// old owner's cursor moves, claims and renewals are refused.
func TestLeaseFencesAStaleOwner(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	s := postgres.NewSupervisorRuntime(pool)
	ctx := t.Context()
	a, ok, err := s.Acquire(ctx, "guard", "a", 100*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("first acquire: %v, %v", ok, err)
	}
	if _, ok, _ := s.Acquire(ctx, "guard", "b", time.Minute); ok {
		t.Fatal("b took a live lease")
	}
	if err := s.SaveCursor(ctx, a, supervisorapp.Cursor{Pos: supervisor.Position{XID: 3, Seq: 7}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	b, ok, err := s.Acquire(ctx, "guard", "b", time.Minute)
	if err != nil || !ok || b.Token != a.Token+1 {
		t.Fatalf("takeover after expiry: %+v, %v, %v; want token %d", b, ok, err, a.Token+1)
	}
	if err := s.SaveCursor(ctx, a, supervisorapp.Cursor{Pos: supervisor.Position{XID: 3, Seq: 9}}); !errors.Is(err, supervisorapp.ErrLeaseLost) {
		t.Fatalf("stale cursor move: got %v, want ErrLeaseLost", err)
	}
	if ok, err := s.Renew(ctx, a, time.Minute); ok || err != nil {
		t.Fatalf("stale renew: got %v, %v; want false", ok, err)
	}
	e := supervisorapp.LedgerEntry{SupervisorID: "guard", Key: "k", Fingerprint: "f", Directive: []byte(`{}`)}
	if _, _, err := s.Claim(ctx, &a, e, "c", time.Minute); !errors.Is(err, supervisorapp.ErrLeaseLost) {
		t.Fatalf("stale claim: got %v, want ErrLeaseLost", err)
	}
	if _, _, err := s.Settle(ctx, &a, e, nil); !errors.Is(err, supervisorapp.ErrLeaseLost) {
		t.Fatalf("stale settle: got %v, want ErrLeaseLost", err)
	}
	if c, _, _ := s.Cursor(ctx, "guard"); c.Pos.Seq != 7 {
		t.Fatalf("cursor: got %+v, want seq 7 (the stale move was refused)", c.Pos)
	}
	if err := s.SaveCursor(ctx, b, supervisorapp.Cursor{Pos: supervisor.Position{XID: 3, Seq: 9}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Acquire(ctx, "guard", "c", time.Minute); ok {
		t.Fatal("a stale release freed b's lease")
	}
	if err := s.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	if c, ok, _ := s.Acquire(ctx, "guard", "c", time.Minute); !ok || c.Token != b.Token+1 {
		t.Fatalf("acquire after release: %+v, %v", c, ok)
	}
}

// TestStartedSignalCarriesASnapshot: an engine that takes STARTED gets it
// first, with the owned unfinished runs, then the events from its cursor.
func TestStartedSignalCarriesASnapshot(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	run := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", run)
	f.supervisor(t, "watcher", `{"name":"Watcher","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`)
	var mu sync.Mutex
	var sigs []supervisor.Signal
	rec := func(context.Context, supervisor.Supervisor, supervisorapp.Fence, []byte) (supervisorapp.Engine, error) {
		return engineFunc(func(_ context.Context, s supervisor.Signal) error {
			mu.Lock()
			defer mu.Unlock()
			sigs = append(sigs, s)
			return nil
		}), nil
	}
	f.runtime(t, "a", svRuntimeOptions{engines: map[string]supervisorapp.EngineFactory{"http": rec}})
	f.waitCursor(t, "watcher")
	other := f.startRun(t, "other", false)
	late := f.startRun(t, "ci", false)
	svEventually(t, 20*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range sigs {
			if e, ok := s.Body().(supervisor.EventSignal); ok && e.ExecutionID == late && e.Type == "ExecutionStarted" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d signals, none the late run's start", len(sigs))
	})
	mu.Lock()
	defer mu.Unlock()
	st, ok := sigs[0].Body().(supervisor.StartedSignal)
	if !ok {
		t.Fatalf("first signal: got %s, want STARTED", sigs[0].Kind())
	}
	snap := st.Snapshot.(supervisorapp.Snapshot)
	if len(snap.Executions) != 1 || snap.Executions[0].ExecutionID != run {
		t.Errorf("snapshot executions: got %+v, want the one owned unfinished run", snap.Executions)
	}
	b, err := json.Marshal(sigs[0])
	if err != nil || !strings.Contains(string(b), `"kind":"STARTED"`) || !strings.Contains(string(b), run) {
		t.Errorf("STARTED wire form: %s, %v", b, err)
	}
	for _, s := range sigs[1:] {
		e, ok := s.Body().(supervisor.EventSignal)
		if !ok {
			t.Fatalf("signal %s after STARTED, want events", s.Kind())
		}
		if e.SessionID != "ci" || e.ExecutionID == other {
			t.Errorf("event of another session reached the supervisor: %+v", e)
		}
		if p, err := supervisor.ParseCursor(s.Cursor()); err != nil || p.Seq != e.Seq || p.XID == 0 {
			t.Errorf("cursor %s of event %d, want its position", s.Cursor(), e.Seq)
		}
	}
}

type engineFunc func(ctx context.Context, s supervisor.Signal) error

func (f engineFunc) Handle(ctx context.Context, s supervisor.Signal) error { return f(ctx, s) }
func (engineFunc) State() ([]byte, error)                                  { return nil, nil }

// TestTickRuleFiresOncePerSlot: a tick rule sends its directive for each
// unfinished run it matches, keyed by the tick's slot, so the same tick
// handled twice has one effect.
func TestTickRuleFiresOncePerSlot(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "ticker", `{"name":"Ticker","engine":{"type":"rules","settings":{"rules":[
		{"id":"pause-old","when":{"tick":true,"status":"RUNNING","if":"now - execution.lastProgressAt >= duration('0s') && execution.activeCount >= 1"},
		 "then":{"command":"PauseWorkflow","reason":"standing still"}}]}},"owns":["session:ci"],"tickSeconds":60}`)
	run := f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", run)
	sum, err := f.sups.Supervisor(t.Context(), "ticker")
	if err != nil {
		t.Fatal(err)
	}
	fence, ok, err := f.store.Acquire(t.Context(), "ticker", "test", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	eng, err := rulesengine.NewFactory(rulesengine.Deps{Submit: f.submit, Runs: f.store, Conditions: f.cond})(t.Context(), sum.Supervisor, fence, nil)
	if err != nil {
		t.Fatal(err)
	}
	tick := supervisor.NewSignal("0", supervisor.TickSignal{At: time.Now()})
	for range 2 {
		if err := eng.Handle(t.Context(), tick); err != nil {
			t.Fatal(err)
		}
	}
	f.waitStatus(t, "PAUSED", run)
	if n := f.count(t, `SELECT count(*) FROM commands WHERE action = 'PAUSE' AND actor = 'supervisor:ticker'`); n != 1 {
		t.Errorf("PAUSE commands from one tick handled twice: got %d, want 1", n)
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_directives WHERE key LIKE 'rule:pause-old:tick:%:' || $1`, run); n != 1 {
		t.Errorf("tick directives keyed by slot and run: got %d, want 1", n)
	}
}

// TestDryRunReplaysAnExecution: the dry run replays a failed run's events
// through rules (a document, or a preset) and reports what would fire,
// sending nothing.
func TestDryRunReplaysAnExecution(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	failed := f.startRun(t, "ci", true)
	f.waitStatus(t, "FAILURE", failed)
	// The outbox is read in commit order: the run's last event is readable
	// once every older transaction of the cluster has ended.
	svEventually(t, 20*time.Second, func() (bool, string) {
		evs, err := postgres.NewReader(f.pool).Events(t.Context(), executionapp.EventQuery{ExecutionID: failed, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Type == executionapp.EventExecutionStatusChanged && e.Data["to"] == "FAILURE" {
				return true, ""
			}
		}
		return false, "the run's end is not readable yet"
	})
	dry := rulesengine.NewDryRun(postgres.NewReader(f.pool), f.store, f.redact, f.cond, f.cond.Check)
	doc := `{"rules": [
		{"id": "pause-on-failure", "when": {"event": "NodeStatusChanged", "status": "FAILURE", "if": "execution.nodes.boom == 'FAILURE' && event.data.error.contains('down')"},
		 "then": {"command": "RestartWorkflow", "reason": "try again"}},
		{"id": "seed", "when": {"event": "NodeStatusChanged", "status": "FAILURE", "count": 3, "withinSeconds": 60}, "then": {"command": "PauseWorkflow"}},
		{"id": "watch", "when": {"tick": true}, "then": {"command": "PauseWorkflow"}},
		{"id": "no-kill", "deny": {"command": "StopWorkflow"}}]}`
	rep, err := dry.Handle(t.Context(), rulesengine.DryRunInput{RuleDocument: json.RawMessage(doc), SessionID: "ci", ExecutionID: failed})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Fired) != 1 || rep.Fired[0].RuleID != "pause-on-failure" || rep.Fired[0].NodeID != "boom" {
		t.Fatalf("fired: got %+v, want pause-on-failure on boom's failure; evaluations %+v", rep.Fired, rep.Evaluations)
	}
	var xid string
	if err := f.pool.QueryRow(t.Context(), `SELECT xid::text FROM events WHERE seq = $1`, rep.Fired[0].Seq).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	x, _ := strconv.ParseUint(xid, 10, 64)
	cursor := supervisor.FormatCursor(supervisor.Position{XID: x, Seq: rep.Fired[0].Seq})
	want := fmt.Sprintf(`{"key":"rule:pause-on-failure:%s","cause":"%s","reason":"try again","command":{"type":"RestartWorkflow","target":"execution:%s"}}`,
		cursor, cursor, failed)
	if string(rep.Fired[0].Directive) != want {
		t.Errorf("directive: got %s, want %s", rep.Fired[0].Directive, want)
	}
	var counted bool
	for _, e := range rep.Evaluations {
		if e.RuleID == "seed" && e.Outcome == rulesengine.RuleCounted && e.Count == 1 && e.Of == 3 {
			counted = true
		}
	}
	if !counted {
		t.Errorf("evaluations %+v: want the seed rule counted 1 of 3", rep.Evaluations)
	}
	if len(rep.NotReplayed) != 2 || rep.Events == 0 {
		t.Errorf("not replayed: %+v (events %d), want the tick and the deny rule", rep.NotReplayed, rep.Events)
	}
	if b, err := json.Marshal(rep); err != nil || !strings.Contains(string(b), `"fired":[{"seq":`) {
		t.Errorf("report as JSON: %s, %v", b, err)
	}
	pre, err := dry.Handle(t.Context(), rulesengine.DryRunInput{Preset: "failure-guard", Parameters: map[string]any{"count": 1, "per": "execution"},
		SessionID: "ci", ExecutionID: failed})
	if err != nil {
		t.Fatal(err)
	}
	if len(pre.Fired) != 1 || !strings.Contains(string(pre.Fired[0].Directive), `"type":"PauseWorkflow","target":"execution:`+failed) {
		t.Errorf("failure-guard preset with count 1: got %+v, want it to pause the run", pre.Fired)
	}
	if _, err := dry.Handle(t.Context(), rulesengine.DryRunInput{RuleDocument: json.RawMessage(doc), SessionID: "other", ExecutionID: failed}); !errors.Is(err, executionapp.ErrExecutionNotFound) {
		t.Errorf("another session's execution: got %v, want ErrExecutionNotFound", err)
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_directives`); n != 0 {
		t.Errorf("a dry run stored %d directives, want none", n)
	}
}

// TestRecreatedSupervisorStartsAtTheHead: a supervisor deleted and created
// again under its old id does not inherit the old cursor, so it does not
// replay what happened while it was gone.
func TestRecreatedSupervisorStartsAtTheHead(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "pauser", pauserDoc)
	stop := f.runtime(t, "a", svRuntimeOptions{})
	f.waitCursor(t, "pauser")
	first, _, err := f.store.Cursor(t.Context(), "pauser")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	unseen := []string{f.startRun(t, "ci", false), f.startRun(t, "ci", false)}
	// "From now on" is in commit order: wait until the runs' starts are
	// readable (older transactions of the cluster have ended), so the
	// outbox head the new supervisor starts at is past them.
	svEventually(t, 20*time.Second, func() (bool, string) {
		evs, err := postgres.NewReader(f.pool).Events(t.Context(), executionapp.EventQuery{ExecutionID: unseen[1], Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return len(evs) == 1, "the second run's start is not readable yet"
	})
	del := supervisorapp.NewDeleteSupervisor(postgres.NewSupervisorTransactor(f.pool), nil, time.Now) // it holds nothing: no resume
	if _, err := del.Handle(t.Context(), supervisorapp.DeleteInput{ID: "pauser", Actor: "key:admin", Channel: "rest"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a later creation time
	f.supervisor(t, "pauser", pauserDoc)
	f.runtime(t, "b", svRuntimeOptions{})
	svEventually(t, 10*time.Second, func() (bool, string) {
		c, _, err := f.store.Cursor(t.Context(), "pauser")
		if err != nil {
			t.Fatal(err)
		}
		return c.Generation != first.Generation, "the cursor still belongs to the deleted supervisor"
	})
	seen := f.startRun(t, "ci", false)
	f.waitStatus(t, "PAUSED", seen)
	f.waitCaughtUp(t, "pauser")
	for _, id := range unseen {
		if s := f.status(t, id); s != "RUNNING" {
			t.Errorf("run %s started while the supervisor was gone is %s, want RUNNING (not replayed)", id, s)
		}
	}
}

// TestFactsManyReadsRunsTogether: FactsMany reads the facts of several
// runs in one query, as the single-run reading would (status, nodes,
// lastProgressAt, activeCount per workflow), and leaves out ids that name
// no run.
func TestFactsManyReadsRunsTogether(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	failed := f.startRun(t, "ci", true)
	waiting := []string{f.startRun(t, "ci", false), f.startRun(t, "ci", false)}
	other := f.startRun(t, "other", false)
	f.waitStatus(t, "FAILURE", failed)
	f.waitStatus(t, "RUNNING", append(waiting, other)...)
	// The waiting runs' first node has finished and nothing else moves any
	// more (the filter has settled, the delay waits): the facts compared
	// below are read at different moments, so they must hold still.
	var last string
	svEventually(t, 20*time.Second, func() (bool, string) {
		n := f.count(t, `SELECT count(*) FROM execution_nodes WHERE node_id = 'in' AND status = 'SUCCESS' AND execution_id = ANY ($1::uuid[])`,
			append(waiting, other))
		var now string
		if err := f.pool.QueryRow(t.Context(), `SELECT string_agg(execution_id::text || node_id || status || coalesce(ended_at::text, ''), ',' ORDER BY execution_id, node_id)
			FROM execution_nodes WHERE execution_id = ANY ($1::uuid[])`, append(waiting, other)).Scan(&now); err != nil {
			t.Fatal(err)
		}
		stable := now == last
		last = now
		if !stable {
			time.Sleep(200 * time.Millisecond)
		}
		return n == 3 && stable, fmt.Sprintf("%d of 3 runs past node in; nodes still moving: %v", n, !stable)
	})
	unknown := "0197a3c4-1111-7222-8333-944445555666"
	got, err := f.store.FactsMany(t.Context(), []string{failed, waiting[0], waiting[1], other, unknown, "not-a-uuid", failed})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("FactsMany of 4 runs, an unknown id, a malformed one and a repeat: got %d entries %v, want the 4 runs", len(got), got)
	}
	want := map[string]struct {
		session, status string
		active          int
		node, nodeIs    string
	}{
		failed:     {"ci", "FAILURE", 2, "boom", "FAILURE"},
		waiting[0]: {"ci", "RUNNING", 2, "in", "SUCCESS"},
		waiting[1]: {"ci", "RUNNING", 2, "in", "SUCCESS"},
		other:      {"other", "RUNNING", 1, "in", "SUCCESS"},
	}
	for id, w := range want {
		r := got[id]
		var lastProgress time.Time
		if err := f.pool.QueryRow(t.Context(), `SELECT greatest(e.started_at, max(n.started_at), max(n.ended_at), max(n.attempt_ended_at))
			FROM executions e LEFT JOIN execution_nodes n ON n.execution_id = e.execution_id WHERE e.execution_id = $1 GROUP BY e.execution_id`,
			id).Scan(&lastProgress); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.ID != id || r.SessionID != w.session || r.WorkflowID != "flaky" || string(r.Status) != w.status:
			t.Errorf("run %s: got %s %s/%s %s, want %s/flaky %s", id, r.ID, r.SessionID, r.WorkflowID, r.Status, w.session, w.status)
		case r.ActiveCount != w.active:
			t.Errorf("run %s: activeCount %d, want %d (unfinished runs of %s/flaky)", id, r.ActiveCount, w.active, w.session)
		case len(r.Nodes) != 5 || string(r.Nodes[w.node]) != w.nodeIs:
			t.Errorf("run %s: nodes %v, want 5 with %s %s", id, r.Nodes, w.node, w.nodeIs)
		case !r.LastProgressAt.Equal(lastProgress) || r.StartedAt.IsZero() || !r.LastProgressAt.After(r.StartedAt):
			t.Errorf("run %s: started %s, last progress %s, want %s (after the start)", id, r.StartedAt, r.LastProgressAt, lastProgress)
		}
		one, ok, err := f.store.Facts(t.Context(), id)
		if err != nil || !ok || one.Status != r.Status || one.ActiveCount != r.ActiveCount || !one.LastProgressAt.Equal(r.LastProgressAt) || len(one.Nodes) != len(r.Nodes) {
			t.Errorf("Facts(%s) = %+v, %v, %v; want what FactsMany read, %+v", id, one, ok, err, r)
		}
	}
	if _, ok, err := f.store.Facts(t.Context(), unknown); ok || err != nil {
		t.Errorf("Facts of an unknown run: ok %v, err %v; want not found", ok, err)
	}
	if m, err := f.store.FactsMany(t.Context(), nil); err != nil || len(m) != 0 {
		t.Errorf("FactsMany of no ids: %v, %v; want nothing", m, err)
	}
}
