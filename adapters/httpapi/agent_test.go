package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/supervisor"
)

// memDelegations is an in-memory delegation store that refuses, as
// PostgreSQL would (with its own words, which must never reach a client),
// any text or JSON the database cannot keep: so a body the strict reader
// let through would show as PostgreSQL text in the answer.
type memDelegations struct {
	mu   sync.Mutex
	byID map[string]supervisor.Delegation
}

// pgRefuses is what PostgreSQL would answer for text it cannot store.
func pgRefuses(texts ...string) error {
	for _, s := range texts {
		if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			return fmt.Errorf("database refused a value: invalid byte sequence for encoding \"UTF8\" (SQLSTATE 22021): %w", fault.ErrInvalid)
		}
	}
	return nil
}

func pgRefusesJSON(b []byte) error {
	if len(b) > 0 && jsonvalue.Validate(b, "") != nil {
		return fmt.Errorf("database refused a value: invalid input syntax for type json (SQLSTATE 22P02): %w", fault.ErrInvalid)
	}
	return nil
}

func (m *memDelegations) OpenDelegation(_ context.Context, d supervisor.Delegation, _, _ string, _ *supervisorapp.Fence) (supervisor.Delegation, bool, error) {
	if err := errors.Join(pgRefuses(d.Key(), d.To(), string(d.Kind())), pgRefusesJSON(d.Payload())); err != nil {
		return supervisor.Delegation{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.byID {
		if o.From() == d.From() && o.Key() == d.Key() {
			return o, false, nil
		}
	}
	m.byID[d.ID()] = d
	return d, true, nil
}

func (m *memDelegations) ChangeDelegation(_ context.Context, id, _, _ string, _ *supervisorapp.Fence,
	change func(supervisor.Delegation) (supervisor.Delegation, error)) (supervisor.Delegation, error) {
	if err := pgRefuses(id); err != nil {
		return supervisor.Delegation{}, err
	}
	m.mu.Lock()
	d, ok := m.byID[id]
	m.mu.Unlock()
	if !ok {
		return supervisor.Delegation{}, fault.Newf(supervisor.ErrDelegationNotFound, "delegation %s not found", clipID(id))
	}
	next, err := change(d)
	if err != nil {
		return supervisor.Delegation{}, err
	}
	// Not kept: every fuzzed answer meets the delegation open.
	return next, pgRefusesJSON(next.Answer())
}

func (m *memDelegations) Delegation(_ context.Context, id string) (supervisor.Delegation, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.byID[id]
	return d, ok, nil
}

func (m *memDelegations) DueDelegations(context.Context, int) ([]string, error) { return nil, nil }

// Ids of agentServer's runs: owned (session ci, workflow nap), of another
// workflow of ci, of another session, and one that does not exist.
const (
	runOwned   = "0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e01"
	runOtherWF = "0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e02"
	runForeign = "0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e03"
	runMissing = "0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e04"
)

// memRuns is a run directory of those runs; its lists filter by the
// units' own rule (supervisor.Unit.Covers).
type memRuns struct {
	runs map[string]supervisorapp.RunInfo
}

func newMemRuns() memRuns {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return memRuns{runs: map[string]supervisorapp.RunInfo{
		runOwned:   {ID: runOwned, SessionID: "ci", WorkflowID: "nap", Status: execution.Running, StartedAt: at},
		runOtherWF: {ID: runOtherWF, SessionID: "ci", WorkflowID: "deploy", Status: execution.Running, StartedAt: at},
		runForeign: {ID: runForeign, SessionID: "other", WorkflowID: "nap", Status: execution.Running, StartedAt: at},
	}}
}

func covered(units []supervisor.Unit, p supervisor.Place) bool {
	for _, u := range units {
		if u.Covers(p) {
			return true
		}
	}
	return false
}

func (m memRuns) Runs(_ context.Context, ids []string) (map[string]supervisorapp.RunInfo, error) {
	out := map[string]supervisorapp.RunInfo{}
	for _, id := range ids {
		if r, ok := m.runs[id]; ok {
			out[id] = r
		}
	}
	return out, nil
}

func (m memRuns) ActiveRuns(_ context.Context, units []supervisor.Unit, _ int) ([]supervisorapp.RunInfo, error) {
	var out []supervisorapp.RunInfo
	for _, id := range []string{runOwned, runOtherWF, runForeign} {
		if r := m.runs[id]; covered(units, r.Place()) {
			out = append(out, r)
		}
	}
	return out, nil
}

// ActiveRunsAfter is ActiveRuns: the test's lists fit in one page.
func (m memRuns) ActiveRunsAfter(ctx context.Context, units []supervisor.Unit, _ supervisorapp.RunPosition, limit int) ([]supervisorapp.RunInfo, error) {
	return m.ActiveRuns(ctx, units, limit)
}

func (memRuns) Facts(context.Context, string) (supervisorapp.RunFacts, bool, error) {
	return supervisorapp.RunFacts{}, false, nil
}
func (memRuns) FactsMany(context.Context, []string) (map[string]supervisorapp.RunFacts, error) {
	return map[string]supervisorapp.RunFacts{}, nil
}
func (memRuns) Input(context.Context, string) (supervisorapp.InputInfo, bool, error) {
	return supervisorapp.InputInfo{}, false, nil
}

func (m memRuns) OpenInputs(_ context.Context, units []supervisor.Unit, _ int) ([]supervisorapp.InputInfo, error) {
	var out []supervisorapp.InputInfo
	for _, id := range []string{runOwned, runOtherWF, runForeign} {
		if r := m.runs[id]; covered(units, r.Place()) {
			out = append(out, supervisorapp.InputInfo{ID: "in-" + id, SessionID: r.SessionID, WorkflowID: r.WorkflowID, ExecutionID: id, NodeID: "ask"})
		}
	}
	return out, nil
}

// runReads serve GET /executions/{id}, its logs and the workflow for the
// runs of memRuns, and count what they were asked: an agent's read of a
// run it does not own must not reach them.
type runReads struct {
	runs  memRuns
	mu    sync.Mutex
	asked []string
}

func (r *runReads) ask(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, what)
}

func (r *runReads) Handle(_ context.Context, sessionID, id string) (executionapp.ExecutionView, error) {
	r.ask("execution " + id)
	run, ok := r.runs.runs[id]
	if !ok || run.SessionID != sessionID {
		return executionapp.ExecutionView{}, fault.Newf(executionapp.ErrExecutionNotFound, "execution %s not found", id)
	}
	return executionapp.ExecutionView{ID: id, SessionID: run.SessionID, WorkflowID: run.WorkflowID, Status: run.Status, StartedAt: run.StartedAt}, nil
}

type runLogs struct{ *runReads }

func (r runLogs) Handle(_ context.Context, in executionapp.TailInput) (executionapp.TailResult, error) {
	r.ask("logs " + in.ExecutionID)
	return executionapp.TailResult{}, nil
}

type runWorkflow struct{ *runReads }

func (r runWorkflow) Handle(_ context.Context, sessionID, workflowID string) (sessionapp.WorkflowView, error) {
	r.ask("workflow " + sessionID + "/" + workflowID)
	return sessionapp.WorkflowView{}, fault.Newf(fault.ErrNotFound, "workflow %s/%s not found", sessionID, workflowID)
}

type runScheduler struct{ *runReads }

func (r runScheduler) Handle(context.Context) (executionapp.SchedulerStatus, error) {
	r.ask("scheduler")
	return executionapp.SchedulerStatus{}, nil
}

// agentServer is the agent API with credentials "yks_<id>" for the
// supervisors given, the real delegation use cases over memDelegations and
// the reads over memRuns. It logs errors only.
func agentServer(t testing.TB, sups ...supervisor.Spec) (http.Handler, *observer.ObservedLogs, *memDelegations, *runReads) {
	t.Helper()
	m := &memSupervisors{byID: map[string]supervisorapp.Summary{}}
	for _, s := range sups {
		s.Enabled = true
		m.byID[s.ID] = supervisorapp.Summary{Supervisor: supervisor.Restore(s)}
	}
	auth := func(_ context.Context, secret, _ string) (access.Principal, error) {
		if id, ok := strings.CutPrefix(secret, "yks_"); ok {
			if _, known := m.byID[id]; known {
				return access.SupervisorPrincipal(id), nil
			}
		}
		return access.Principal{}, supervisorapp.ErrAgentUnauthenticated
	}
	dels := &memDelegations{byID: map[string]supervisor.Delegation{}}
	deps := supervisorapp.DelegationDeps{Store: dels, Supervisors: m, Now: func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }}
	reads := &runReads{runs: newMemRuns()}
	core, logs := observer.New(zapcore.ErrorLevel)
	srv, err := New(Config{Addr: "127.0.0.1:0", Security: Security{Agent: auth}}, UseCases{Agent: AgentUseCases{
		Caller: supervisorapp.NewAgentCaller(m), Signals: noSignals{}, Delegate: supervisorapp.NewDelegate(deps),
		AnswerDelegation: supervisorapp.NewAnswerDelegation(deps), Self: supervisorapp.NewReadAgentSelf(m),
		Executions: supervisorapp.NewListAgentExecutions(reads.runs), Inputs: supervisorapp.NewListAgentInputs(reads.runs),
		Execution: supervisorapp.NewGetAgentExecution(reads.runs, reads), Logs: supervisorapp.NewReadAgentLogs(reads.runs, runLogs{reads}),
		Workflow: supervisorapp.NewReadAgentWorkflow(runWorkflow{reads}), Scheduler: supervisorapp.NewReadAgentScheduler(runScheduler{reads}),
	}}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler(), logs, dels, reads
}

// dbWords are fragments of PostgreSQL's text that must never reach a client.
var dbWords = []string{"SQLSTATE", "database refused", "invalid byte sequence", "invalid input syntax"}

// fuzzAgentBody sends body to path as supervisor as: no 5xx, every refusal
// a problem of ours in plain words (no Go, no PostgreSQL text), every 400
// with violations.
func fuzzAgentBody(t *testing.T, h http.Handler, logs *observer.ObservedLogs, as, path string, body []byte) {
	a := send(h, "POST", path, jsonCT, body, "Authorization", "Bearer yks_"+as)
	if a.status >= 500 {
		t.Fatalf("POST %s with body %q: %d %s", path, body, a.status, a.body)
	}
	if a.status >= 400 {
		checkWords(t, "POST "+path, a)
		for _, w := range dbWords {
			if strings.Contains(a.body, w) {
				t.Errorf("POST %s: answer holds PostgreSQL text %q: %s", path, w, a.body)
			}
		}
		if t.Failed() {
			t.Fatalf("body %q", body)
		}
	}
	if a.status == http.StatusBadRequest && len(a.p.Errors) == 0 {
		t.Fatalf("POST %s with body %q: 400 without violations: %s", path, body, a.body)
	}
	if n := logs.FilterMessage("request failed").Len(); n != 0 {
		t.Fatalf("body %q: %d requests failed with a 5xx", body, n)
	}
}

// delegationSeeds are bodies for both delegation routes: the review's
// repros and their neighbours.
var delegationSeeds = []string{
	`{}`, ``, ` `, `null`, `[]`, `"x"`, `1`,
	`{"kind":"ESCALATE","key":"k","payload":1}`, `{"kind":"CONSULT","key":"k","to":"lead","payload":{"q":1}}`,
	`{"kind":"ESCALATE","kind":"CONSULT","key":"k","to":"lead","payload":1}`, `{"kind":"ESCALATE","key":"k","payload":1e400}`,
	`{"kind":"ESCALATE","key":"k","payload":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	`{"kind":"ESCALATE","key":"k","payload":1} {}`, `{"kind":"ESCALATE","key":"k\u0000","payload":1}`,
	"{\"kind\":\"ESCALATE\",\"key\":\"k\x00\",\"payload\":1}", `{"kind":"ESCALATE","key":"k","payload":"\ud800"}`,
	"{\"kind\":\"ESCALATE\",\"key\":\"\xff\",\"payload\":1}", `{"kind":5,"key":"k","payload":1}`, `{"kind":"ESCALATE","key":"k","payload":1,"x":1}`,
	`{"answer":1}`, `{"answer":1,"answer":2}`, `{"answer":1e400}`, `{"answer":"\u0000"}`, `{"answer":"\udfff"}`, "{\"answer\":\"\xc3\x28\"}",
	`{"answer":{"a":1,"a":2}}`, `{"answer":1}x`, `{"answer":` + strings.Repeat("{\"a\":", 200) + "1" + strings.Repeat("}", 200) + `}`,
	`{"answer"}`, `{"answer":}`, `{"answer":-}`, `{"answer":01}`, `{"answer":tru}`, "\ufeff{}", `{"to":"\ud800\udc00","kind":"CONSULT","key":"k","payload":1}`,
}

// FuzzAgentDelegate: any bytes as the body of POST /api/agent/v1/delegations,
// through the real middleware, reader and use case. Run longer with:
// go test ./adapters/httpapi -run '^$' -fuzz FuzzAgentDelegate -fuzztime 5m
func FuzzAgentDelegate(f *testing.F) {
	for _, s := range delegationSeeds {
		f.Add([]byte(s))
	}
	h, logs, _, _ := agentServer(f, supervisor.Spec{ID: "lead", Name: "Lead", EngineType: "http", Owns: []string{"session:ci"}},
		supervisor.Spec{ID: "worker", Name: "Worker", EngineType: "http", Owns: []string{"session:ci"}, ParentID: "lead"})
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzAgentBody(t, h, logs, "worker", AgentBase+"/delegations", body)
	})
}

// FuzzAgentAnswerDelegation: any bytes as the body of POST
// /api/agent/v1/delegations/{id}, for an open delegation to the caller.
// Run longer with:
// go test ./adapters/httpapi -run '^$' -fuzz FuzzAgentAnswerDelegation -fuzztime 5m
func FuzzAgentAnswerDelegation(f *testing.F) {
	for _, s := range delegationSeeds {
		f.Add([]byte(s))
	}
	h, logs, dels, _ := agentServer(f, supervisor.Spec{ID: "lead", Name: "Lead", EngineType: "http", Owns: []string{"session:ci"}},
		supervisor.Spec{ID: "worker", Name: "Worker", EngineType: "http", Owns: []string{"session:ci"}, ParentID: "lead"})
	a := send(h, "POST", AgentBase+"/delegations", jsonCT, []byte(`{"kind":"ESCALATE","key":"open","payload":{"q":1}}`), "Authorization", "Bearer yks_worker")
	if a.status != http.StatusCreated || len(dels.byID) != 1 {
		f.Fatalf("open a delegation: %d %s", a.status, a.body)
	}
	var id string
	for k := range dels.byID {
		id = k
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fuzzAgentBody(t, h, logs, "lead", AgentBase+"/delegations/"+id, body)
	})
}

// TestAgentReadsOfRunsNotOwned: for a supervisor that owns workflow ci/nap,
// a run of another workflow of its session, a run of another session and
// a run that does not exist answer alike (404, the same words but the
// id) on GET /executions/{id} and its logs, and none reaches the read
// behind them; the lists hold only the owned run's; a workflow outside the
// units is the same 404 whether it exists or not; the scheduler is only a
// server supervisor's.
func TestAgentReadsOfRunsNotOwned(t *testing.T) {
	t.Parallel()
	h, _, _, reads := agentServer(t, supervisor.Spec{ID: "nap", Name: "Nap", EngineType: "http", Owns: []string{"workflow:ci/nap"}},
		supervisor.Spec{ID: "root", Name: "Root", EngineType: "http", Owns: []string{"server"}})
	get := func(as, path string) answer {
		return send(h, "GET", AgentBase+path, "", nil, "Authorization", "Bearer yks_"+as)
	}
	if a := get("nap", "/executions/"+runOwned); a.status != http.StatusOK || !strings.Contains(a.body, runOwned) {
		t.Fatalf("the owned run: %d %s", a.status, a.body)
	}
	for _, tail := range []string{"", "/logs"} {
		want := get("nap", "/executions/"+runMissing+tail)
		if want.status != http.StatusNotFound {
			t.Fatalf("a missing run%s: %d %s, want 404", tail, want.status, want.body)
		}
		for _, id := range []string{runOtherWF, runForeign} {
			a := get("nap", "/executions/"+id+tail)
			if a.status != want.status || a.p.Type != want.p.Type || strings.ReplaceAll(a.body, id, runMissing) != want.body {
				t.Fatalf("a run not owned (%s%s) answers %d %s; a missing one %d %s: they must not differ", id, tail, a.status, a.body, want.status, want.body)
			}
		}
	}
	reads.mu.Lock()
	asked := strings.Join(reads.asked, ", ")
	reads.mu.Unlock()
	if asked != "execution "+runOwned {
		t.Fatalf("the reads behind the agent API were asked: %s; want only the owned run", asked)
	}
	for _, path := range []string{"/executions", "/inputs"} {
		a := get("nap", path)
		if a.status != http.StatusOK || !strings.Contains(a.body, runOwned) || strings.Contains(a.body, runOtherWF) || strings.Contains(a.body, runForeign) {
			t.Fatalf("GET %s: %d %s, want only the owned run", path, a.status, a.body)
		}
	}
	// A workflow outside the units: the same answer whether it exists
	// (ci/deploy, other/nap) or not (ci/none), and not asked for.
	want := get("nap", "/workflows/ci/none")
	for _, wf := range []string{"ci/deploy", "other/nap"} {
		a := get("nap", "/workflows/"+wf)
		if a.status != http.StatusNotFound || want.status != http.StatusNotFound || strings.ReplaceAll(a.body, wf, "ci/none") != want.body {
			t.Fatalf("workflow %s outside the units: %d %s; one that does not exist: %d %s", wf, a.status, a.body, want.status, want.body)
		}
	}
	if a := get("nap", "/scheduler"); a.status != http.StatusForbidden {
		t.Fatalf("the scheduler for a workflow's supervisor: %d %s, want 403", a.status, a.body)
	}
	reads.mu.Lock()
	asked = strings.Join(reads.asked, ", ")
	reads.mu.Unlock()
	if asked != "execution "+runOwned {
		t.Fatalf("reads outside the units reached the use cases: %s", asked)
	}
	if a := get("root", "/scheduler"); a.status != http.StatusOK {
		t.Fatalf("the scheduler for the server's supervisor: %d %s", a.status, a.body)
	}
	if a := get("root", "/executions/"+runForeign); a.status != http.StatusOK {
		t.Fatalf("a run for the server's supervisor: %d %s", a.status, a.body)
	}
}
