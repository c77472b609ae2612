package rulesengine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

// countingRuns is a RunDirectory that knows some runs' facts and records
// the facts queries (Facts and FactsMany) and how often each run was read.
type countingRuns struct {
	facts   map[string]supervisorapp.RunFacts
	reads   map[string]int
	queries [][]string // the ids of each query, in order
}

func newCountingRuns(ids ...string) *countingRuns {
	r := &countingRuns{facts: map[string]supervisorapp.RunFacts{}, reads: map[string]int{}}
	for _, id := range ids {
		r.facts[id] = supervisorapp.RunFacts{RunInfo: supervisorapp.RunInfo{ID: id, SessionID: "ci", WorkflowID: "build", Status: execution.Running, StartedAt: t0},
			LastProgressAt: t0, ActiveCount: len(ids), Nodes: map[string]execution.NodeStatus{"a": execution.NodeStatus("RUNNING")}}
	}
	return r
}

func (r *countingRuns) Facts(_ context.Context, id string) (supervisorapp.RunFacts, bool, error) {
	r.queries = append(r.queries, []string{id})
	r.reads[id]++
	f, ok := r.facts[id]
	return f, ok, nil
}

func (r *countingRuns) FactsMany(_ context.Context, ids []string) (map[string]supervisorapp.RunFacts, error) {
	r.queries = append(r.queries, slices.Clone(ids))
	out := map[string]supervisorapp.RunFacts{}
	for _, id := range ids {
		r.reads[id]++
		if f, ok := r.facts[id]; ok {
			out[id] = f
		}
	}
	return out, nil
}

func (r *countingRuns) Runs(context.Context, []string) (map[string]supervisorapp.RunInfo, error) {
	return map[string]supervisorapp.RunInfo{}, nil
}

func (r *countingRuns) ActiveRuns(context.Context, []supervisor.Unit, int) ([]supervisorapp.RunInfo, error) {
	return nil, nil
}

func (r *countingRuns) Input(context.Context, string) (supervisorapp.InputInfo, bool, error) {
	return supervisorapp.InputInfo{}, false, nil
}

func (r *countingRuns) OpenInputs(context.Context, []supervisor.Unit, int) ([]supervisorapp.InputInfo, error) {
	return nil, nil
}

// sender records the directives it is sent and runs onSend on each, as the
// intake applying them would.
type sender struct {
	sent   []supervisor.Directive
	onSend func(supervisor.Directive)
}

func (s *sender) Handle(_ context.Context, in supervisorapp.SubmitInput) (supervisorapp.DirectiveResult, error) {
	s.sent = append(s.sent, in.Directive)
	if s.onSend != nil {
		s.onSend(in.Directive)
	}
	return supervisorapp.DirectiveResult{SupervisorID: in.SupervisorID, Key: in.Directive.Key()}, nil
}

// events are node status changes of runs of workflow ci/build, as the
// outbox would hold them.
type events struct{ evs []executionapp.StoredEvent }

// add appends a node status change of run.
func (o *events) add(run, node, to string) {
	seq := int64(len(o.evs) + 1)
	o.evs = append(o.evs, executionapp.StoredEvent{XID: uint64(100 + seq), Seq: seq, Event: executionapp.Event{Type: executionapp.EventNodeStatusChanged,
		At: t0.Add(time.Duration(seq) * time.Second), SessionID: "ci", WorkflowID: "build", ExecutionID: run, NodeID: node,
		Actor: "engine", Channel: "engine", Data: map[string]any{"from": "RUNNING", "to": to}}})
}

// rulesSupervisor is a rules supervisor "guard" owning session ci with the
// rules (a JSON array).
func rulesSupervisor(t *testing.T, rules string) (supervisor.Supervisor, *cel.Conditions) {
	t.Helper()
	c, err := cel.NewConditions()
	if err != nil {
		t.Fatal(err)
	}
	sup, err := supervisor.Parse([]byte(`{"name":"Guard","engine":{"type":"rules","settings":{"rules":`+rules+`}},"owns":["session:ci"]}`),
		supervisor.ParseOptions{ID: "guard", Check: c.Check})
	if err != nil {
		t.Fatal(err)
	}
	return sup, c
}

// rulesEngineOver starts the rules engine of rules over runs and send.
func rulesEngineOver(t *testing.T, rules string, runs supervisorapp.RunDirectory, send supervisorapp.DirectiveSender) supervisorapp.BatchEngine {
	t.Helper()
	sup, c := rulesSupervisor(t, rules)
	eng, err := NewFactory(Deps{Submit: send, Runs: runs, Conditions: c, Check: c.Check, Now: func() time.Time { return t0 },
		OnRuleError: func(_, rule string, err error) { t.Errorf("rule %s: %v", rule, err) }})(t.Context(), sup, supervisorapp.Fence{SupervisorID: "guard", Token: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := eng.(supervisorapp.BatchEngine)
	if !ok {
		t.Fatalf("the rules engine (%T) is not a BatchEngine: it cannot keep facts for a batch", eng)
	}
	return b
}

// handle hands the engine an EVENT signal for each stored event.
func handle(t *testing.T, eng supervisorapp.Engine, evs ...executionapp.StoredEvent) {
	t.Helper()
	for _, e := range evs {
		if err := eng.Handle(t.Context(), supervisor.NewSignal(supervisorapp.EventCursor(e), supervisorapp.EventSignal(e, e.Data))); err != nil {
			t.Fatal(err)
		}
	}
}

// neverHolds is a rule on node status changes whose if never holds.
func neverHolds(id, cond string) string {
	return fmt.Sprintf(`{"id":%q,"when":{"event":"NodeStatusChanged","if":%q},"then":{"command":"PauseWorkflow"}}`, id, cond)
}

// TestFactsAreReadOnlyForAnIfThatReadsExecution: an event costs a facts
// query only when a rule it matches has an if that reads execution.
func TestFactsAreReadOnlyForAnIfThatReadsExecution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules string
		want  int // queries for the three events
	}{
		{"ifs that read the event and now",
			`[` + neverHolds("a", "event.data.to == 'NEVER' && event.nodeId != ''") + `,` + neverHolds("b", "now < event.at && event.executionId == 'x'") + `]`, 0},
		{"no if", `[{"id":"a","when":{"event":"NodeStatusChanged","status":"PENDING"},"then":{"command":"PauseWorkflow"}}]`, 0},
		{"an if that reads execution, on a rule the events do not match",
			`[` + neverHolds("a", "event.nodeId == 'x'") + `,
			  {"id":"b","when":{"event":"ExecutionStatusChanged","if":"execution.status == 'PAUSED'"},"then":{"command":"PauseWorkflow"}}]`, 0},
		{"an if that reads execution, one read per event (no batch)",
			`[` + neverHolds("a", "event.nodeId == 'x'") + `,` + neverHolds("b", "execution.status == 'NEVER'") + `,` +
				neverHolds("c", "execution.activeCount > 100") + `]`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runs := newCountingRuns("r1")
			eng := rulesEngineOver(t, tt.rules, runs, &sender{})
			var o events
			o.add("r1", "a", "SUCCESS")
			o.add("r1", "b", "SUCCESS")
			o.add("r1", "c", "FAILURE")
			handle(t, eng, o.evs...)
			if got := len(runs.queries); got != tt.want {
				t.Errorf("facts queries for 3 events: got %d (%v), want %d", got, runs.queries, tt.want)
			}
		})
	}
}

// TestFactsAreReadOncePerBatch: the runtime brackets a batch of events of
// two runs (BeginBatch with the batch's runs, EndBatch after:
// supervisorapp's TestPumpBracketsEachBatch); the first event whose rules
// read execution reads the facts of both runs in one query, kept for the
// batch; the next batch reads them again.
func TestFactsAreReadOncePerBatch(t *testing.T) {
	t.Parallel()
	runs := newCountingRuns("r1", "r2")
	rules := `[` + neverHolds("a", "event.nodeId == 'x'") + `,` +
		`{"id":"b","when":{"event":"NodeStatusChanged","status":"FAILURE","if":"execution.status == 'NEVER'"},"then":{"command":"PauseWorkflow"}},` +
		`{"id":"c","when":{"event":"NodeStatusChanged","status":"FAILURE","if":"execution.nodes.a == 'NEVER' && event.nodeId != ''"},"then":{"command":"PauseWorkflow"}}]`
	eng := rulesEngineOver(t, rules, runs, &sender{})
	o := &events{}
	o.add("r1", "a", "SUCCESS") // no rule reads execution
	o.add("r2", "a", "FAILURE") // the facts of r2 and r1 are read
	o.add("r1", "b", "FAILURE")
	o.add("r2", "b", "FAILURE")
	o.add("r1", "c", "FAILURE")
	o.add("r2", "c", "SUCCESS")
	eng.BeginBatch([]string{"r1", "r2"})
	handle(t, eng, o.evs...)
	eng.EndBatch()
	if want := [][]string{{"r2", "r1"}}; !slices.EqualFunc(runs.queries, want, slices.Equal) {
		t.Errorf("facts queries of a batch of 3 events each of r1 and r2: got %v, want %v", runs.queries, want)
	}
	o.add("r1", "d", "FAILURE")
	o.add("r1", "e", "FAILURE")
	eng.BeginBatch([]string{"r1"})
	handle(t, eng, o.evs[6:]...)
	eng.EndBatch()
	if want := [][]string{{"r2", "r1"}, {"r1"}}; !slices.EqualFunc(runs.queries, want, slices.Equal) {
		t.Errorf("facts queries after a second batch of 2 events of r1: got %v, want %v", runs.queries, want)
	}
	// Outside a batch (as for a TICK) nothing is kept.
	handle(t, eng, o.evs[1], o.evs[1])
	if len(runs.queries) != 4 {
		t.Errorf("facts queries after 2 events outside a batch: got %v, want 2 more", runs.queries)
	}
}

// downRuns is a run directory whose facts cannot be read while down.
type downRuns struct {
	*countingRuns
	down bool
}

func (r *downRuns) Facts(ctx context.Context, id string) (supervisorapp.RunFacts, bool, error) {
	if r.down {
		return supervisorapp.RunFacts{}, false, errors.New("database unreachable")
	}
	return r.countingRuns.Facts(ctx, id)
}

func (r *downRuns) FactsMany(ctx context.Context, ids []string) (map[string]supervisorapp.RunFacts, error) {
	if r.down {
		return nil, errors.New("database unreachable")
	}
	return r.countingRuns.FactsMany(ctx, ids)
}

// TestAFailedFactsReadFailsTheSignal: a condition whose run facts could not
// be read (the database) is no false condition: the signal fails, nothing
// is sent and no window moves, so the runtime hands it again
// (supervisorapp's TestCursorStopsBeforeAFailedSignal), and then it fires.
func TestAFailedFactsReadFailsTheSignal(t *testing.T) {
	t.Parallel()
	rules := `[{"id":"fail","when":{"event":"NodeStatusChanged","status":"FAILURE","if":"execution.status == 'RUNNING'"},"then":{"command":"PauseWorkflow"}}]`
	runs := &downRuns{countingRuns: newCountingRuns("r1", "r2")}
	send := &sender{}
	eng := rulesEngineOver(t, rules, runs, send)
	o := &events{}
	o.add("r2", "a", "FAILURE")
	sig := supervisor.NewSignal(supervisorapp.EventCursor(o.evs[0]), supervisorapp.EventSignal(o.evs[0], o.evs[0].Data))
	runs.down = true
	if err := eng.Handle(t.Context(), sig); err == nil {
		t.Fatal("a signal whose facts could not be read: got no error")
	}
	if len(send.sent) != 0 {
		t.Fatalf("directives sent while the facts were unread: %v", send.sent)
	}
	runs.down = false
	if err := eng.Handle(t.Context(), sig); err != nil {
		t.Fatal(err)
	}
	if len(send.sent) != 1 {
		t.Fatalf("directives after the failed signal came again: got %d, want 1", len(send.sent))
	}
}

// TestADirectiveDropsTheKeptFacts: a directive the engine sends may change
// runs (PauseWorkflow pauses every run of the workflow), so the next events
// of the batch read their runs' facts again and see the change: the rule
// fires once, not once per run or per failure.
func TestADirectiveDropsTheKeptFacts(t *testing.T) {
	t.Parallel()
	runs := newCountingRuns("r1", "r2")
	send := &sender{}
	send.onSend = func(d supervisor.Directive) { // the pause lands
		for id, f := range runs.facts {
			f.Status = execution.Paused
			runs.facts[id] = f
		}
	}
	eng := rulesEngineOver(t, `[{"id":"pause","when":{"event":"NodeStatusChanged","if":"event.data.to == 'FAILURE' && execution.status == 'RUNNING'"},
		"then":{"command":"PauseWorkflow"}}]`, runs, send)
	var o events
	o.add("r1", "a", "SUCCESS")
	o.add("r2", "a", "SUCCESS")
	o.add("r1", "b", "FAILURE")
	o.add("r1", "c", "FAILURE")
	o.add("r2", "b", "FAILURE")
	eng.BeginBatch([]string{"r1", "r2"})
	handle(t, eng, o.evs...)
	eng.EndBatch()
	if len(send.sent) != 1 {
		t.Errorf("directives: got %d, want 1 (after the pause both runs read PAUSED)", len(send.sent))
	}
	// Both runs together before the directive, then run by run.
	if want := [][]string{{"r1", "r2"}, {"r1"}, {"r2"}}; !slices.EqualFunc(runs.queries, want, slices.Equal) {
		t.Errorf("facts queries: got %v, want %v", runs.queries, want)
	}
}

func TestReadsExecution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		expr string
		want bool
	}{
		{"execution.status == 'RUNNING'", true},
		{"now - execution.lastProgressAt > duration('5m')", true},
		{"has(execution.nodes.ship)", true},
		{"event.nodeId == 'a' && (execution)['activeCount'] > 1", true},
		{"event.data.to == 'FAILURE' &&\nexecution.activeCount > 3", true},
		{"event.executionId != ''", false},
		{"event.data.execution_id == 'x' || event.data.myexecution == 1 || event.data.executions == 2", false},
		{"event.data.to == 'FAILURE'", false},
		// A string or a field named execution counts: a read too many, never
		// one too few.
		{"event.data.note == 'execution'", true},
		{"event.data.execution == 1", true},
	}
	for _, tt := range tests {
		if got := readsExecution(tt.expr); got != tt.want {
			t.Errorf("readsExecution(%q) = %v, want %v", tt.expr, got, tt.want)
		}
	}
}
