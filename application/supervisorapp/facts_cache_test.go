package supervisorapp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/supervisor"
)

// countingRuns is a RunDirectory that knows some runs' facts and records
// the facts queries (Facts and FactsMany) and how often each run was read.
type countingRuns struct {
	facts   map[string]RunFacts
	reads   map[string]int
	queries [][]string // the ids of each query, in order
}

func newCountingRuns(ids ...string) *countingRuns {
	r := &countingRuns{facts: map[string]RunFacts{}, reads: map[string]int{}}
	for _, id := range ids {
		r.facts[id] = RunFacts{RunInfo: RunInfo{ID: id, SessionID: "ci", WorkflowID: "build", Status: execution.Running, StartedAt: t0},
			LastProgressAt: t0, ActiveCount: len(ids), Nodes: map[string]execution.NodeStatus{"a": execution.NodeStatus("RUNNING")}}
	}
	return r
}

func (r *countingRuns) Facts(_ context.Context, id string) (RunFacts, bool, error) {
	r.queries = append(r.queries, []string{id})
	r.reads[id]++
	f, ok := r.facts[id]
	return f, ok, nil
}

func (r *countingRuns) FactsMany(_ context.Context, ids []string) (map[string]RunFacts, error) {
	r.queries = append(r.queries, slices.Clone(ids))
	out := map[string]RunFacts{}
	for _, id := range ids {
		r.reads[id]++
		if f, ok := r.facts[id]; ok {
			out[id] = f
		}
	}
	return out, nil
}

func (r *countingRuns) Runs(context.Context, []string) (map[string]RunInfo, error) {
	return map[string]RunInfo{}, nil
}

func (r *countingRuns) ActiveRuns(context.Context, []supervisor.Unit, int) ([]RunInfo, error) {
	return nil, nil
}

func (r *countingRuns) Input(context.Context, string) (InputInfo, bool, error) {
	return InputInfo{}, false, nil
}

func (r *countingRuns) OpenInputs(context.Context, []supervisor.Unit, int) ([]InputInfo, error) {
	return nil, nil
}

// sender records the directives it is sent and runs onSend on each, as the
// intake applying them would.
type sender struct {
	sent   []supervisor.Directive
	onSend func(supervisor.Directive)
}

func (s *sender) Handle(_ context.Context, in SubmitInput) (DirectiveResult, error) {
	s.sent = append(s.sent, in.Directive)
	if s.onSend != nil {
		s.onSend(in.Directive)
	}
	return DirectiveResult{SupervisorID: in.SupervisorID, Key: in.Directive.Key()}, nil
}

// outbox is an EventTail over a list the test appends to.
type outbox struct{ evs []executionapp.StoredEvent }

func (o *outbox) EventHead(context.Context) (int64, error) {
	if len(o.evs) == 0 {
		return 0, nil
	}
	return o.evs[len(o.evs)-1].Seq, nil
}

func (o *outbox) Events(_ context.Context, q executionapp.EventQuery) ([]executionapp.StoredEvent, error) {
	var out []executionapp.StoredEvent
	for _, e := range o.evs {
		if (supervisor.Position{XID: q.AfterXID, Seq: q.AfterSeq}).Before(EventPosition(e)) && len(out) < q.Limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// add appends a node status change of run (workflow ci/build) to the
// outbox.
func (o *outbox) add(run, node, to string) { o.addIn("ci", run, node, to) }

// addIn appends a node status change of run of workflow build of session.
func (o *outbox) addIn(session, run, node, to string) {
	seq := int64(len(o.evs) + 1)
	o.evs = append(o.evs, executionapp.StoredEvent{XID: uint64(100 + seq), Seq: seq, Event: executionapp.Event{Type: executionapp.EventNodeStatusChanged,
		At: t0.Add(time.Duration(seq) * time.Second), SessionID: session, WorkflowID: "build", ExecutionID: run, NodeID: node,
		Actor: "engine", Channel: "engine", Data: map[string]any{"from": "RUNNING", "to": to}}})
}

// asIs redacts nothing.
type asIs struct{}

func (asIs) Redact(_ context.Context, e executionapp.StoredEvent) (map[string]any, error) {
	return e.Data, nil
}

// memCursors keeps the cursors saved.
type memCursors struct{ saved []Cursor }

func (c *memCursors) Cursor(context.Context, string) (Cursor, bool, error) {
	return Cursor{}, false, nil
}

func (c *memCursors) CreatedAt(context.Context, string) (supervisor.Position, bool, error) {
	return supervisor.Position{}, false, nil
}

func (c *memCursors) SaveCursor(_ context.Context, _ Fence, cur Cursor) error {
	c.saved = append(c.saved, cur)
	return nil
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
func rulesEngineOver(t *testing.T, rules string, runs RunDirectory, send DirectiveSender) BatchEngine {
	t.Helper()
	sup, c := rulesSupervisor(t, rules)
	eng, err := NewRulesEngineFactory(RulesDeps{Submit: send, Runs: runs, Conditions: c, Check: c.Check, Now: func() time.Time { return t0 },
		OnRuleError: func(_, rule string, err error) { t.Errorf("rule %s: %v", rule, err) }})(t.Context(), sup, Fence{SupervisorID: "guard", Token: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := eng.(BatchEngine)
	if !ok {
		t.Fatalf("the rules engine (%T) is not a BatchEngine: it cannot keep facts for a batch", eng)
	}
	return b
}

// handle hands the engine an EVENT signal for each stored event.
func handle(t *testing.T, eng Engine, evs ...executionapp.StoredEvent) {
	t.Helper()
	for _, e := range evs {
		if err := eng.Handle(t.Context(), supervisor.NewSignal(EventCursor(e), EventSignal(e, e.Data))); err != nil {
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
			var o outbox
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

// TestRuntimeReadsFactsOncePerBatch: the runtime hands the rules engine a
// batch of events of two runs; the first event whose rules read execution
// reads the facts of both runs in one query, kept for the batch; the next
// batch reads them again.
func TestRuntimeReadsFactsOncePerBatch(t *testing.T) {
	t.Parallel()
	runs := newCountingRuns("r1", "r2")
	rules := `[` + neverHolds("a", "event.nodeId == 'x'") + `,` +
		`{"id":"b","when":{"event":"NodeStatusChanged","status":"FAILURE","if":"execution.status == 'NEVER'"},"then":{"command":"PauseWorkflow"}},` +
		`{"id":"c","when":{"event":"NodeStatusChanged","status":"FAILURE","if":"execution.nodes.a == 'NEVER' && event.nodeId != ''"},"then":{"command":"PauseWorkflow"}}]`
	sup, _ := rulesSupervisor(t, rules)
	eng := rulesEngineOver(t, rules, runs, &sender{})
	o := &outbox{}
	cursors := &memCursors{}
	rt := NewRuntime(RuntimeDeps{Events: o, Cursors: cursors, Redactor: asIs{}}, RuntimeConfig{})
	var cur Cursor
	o.add("r1", "a", "SUCCESS") // no rule reads execution
	o.add("r2", "a", "FAILURE") // the facts of r2 and r1 are read
	o.add("r1", "b", "FAILURE")
	o.add("r2", "b", "FAILURE")
	o.add("r1", "c", "FAILURE")
	o.add("r2", "c", "SUCCESS")
	if n, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err != nil || n != 6 {
		t.Fatalf("first batch: %d events, %v", n, err)
	}
	if want := [][]string{{"r2", "r1"}}; !slices.EqualFunc(runs.queries, want, slices.Equal) {
		t.Errorf("facts queries of a batch of 3 events each of r1 and r2: got %v, want %v", runs.queries, want)
	}
	o.add("r1", "d", "FAILURE")
	o.add("r1", "e", "FAILURE")
	if n, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err != nil || n != 2 {
		t.Fatalf("second batch: %d events, %v", n, err)
	}
	if want := [][]string{{"r2", "r1"}, {"r1"}}; !slices.EqualFunc(runs.queries, want, slices.Equal) {
		t.Errorf("facts queries after a second batch of 2 events of r1: got %v, want %v", runs.queries, want)
	}
	// Outside a batch (as for a TICK) nothing is kept.
	handle(t, eng, o.evs[1], o.evs[1])
	if len(runs.queries) != 4 {
		t.Errorf("facts queries after 2 events outside a batch: got %v, want 2 more", runs.queries)
	}
	if cur.Pos.Seq != 8 || len(cursors.saved) != 2 {
		t.Errorf("cursor: got %+v after %d saves, want seq 8 after 2", cur.Pos, len(cursors.saved))
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
	var o outbox
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

// batchRecorder is a BatchEngine that records what it is told and fails
// the signal of seq failAt.
type batchRecorder struct {
	log    []string
	failAt int64
}

func (b *batchRecorder) BeginBatch(runs []string) {
	b.log = append(b.log, fmt.Sprintf("begin %v", runs))
}
func (b *batchRecorder) EndBatch()              { b.log = append(b.log, "end") }
func (b *batchRecorder) State() ([]byte, error) { return nil, nil }
func (b *batchRecorder) Handle(_ context.Context, sig supervisor.Signal) error {
	p, _ := supervisor.ParseCursor(sig.Cursor())
	b.log = append(b.log, strconv.FormatInt(p.Seq, 10))
	if p.Seq == b.failAt {
		return errors.New("down")
	}
	return nil
}

// TestPumpBracketsEachBatch: the runtime tells a BatchEngine where each
// batch begins, with the runs of its owned events, and ends, a failed one
// included.
func TestPumpBracketsEachBatch(t *testing.T) {
	t.Parallel()
	sup, _ := rulesSupervisor(t, `[`+neverHolds("a", "event.nodeId == 'x'")+`]`)
	o := &outbox{}
	rt := NewRuntime(RuntimeDeps{Events: o, Cursors: &memCursors{}, Redactor: asIs{}}, RuntimeConfig{})
	eng := &batchRecorder{failAt: 6}
	var cur Cursor
	o.add("r1", "a", "SUCCESS")
	o.addIn("other", "r9", "a", "SUCCESS") // not owned: not delivered
	o.add("r2", "a", "SUCCESS")
	o.add("r1", "b", "SUCCESS")
	if _, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err != nil {
		t.Fatal(err)
	}
	o.add("r3", "c", "SUCCESS")
	o.add("r3", "d", "SUCCESS")
	o.add("r4", "e", "SUCCESS")
	if _, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err == nil {
		t.Fatal("a batch whose signal failed: got no error")
	}
	want := []string{"begin [r1 r2]", "1", "3", "4", "end", "begin [r3 r4]", "5", "6", "end"}
	if !slices.Equal(eng.log, want) {
		t.Errorf("engine calls: got %v, want %v", eng.log, want)
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
