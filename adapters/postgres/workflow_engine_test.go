package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/engines/workflowengine"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// wfCISession is session "ci" of the fixture with a workflow that asks a
// person (or a supervisor) whether to ship: approved ends in RESULT
// "shipped", rejected fails.
var wfCISession = strings.Replace(svSession, `"edges":[{"source":"in","target":"gate"},{"source":"gate","target":"boom"},{"source":"in","target":"nap"},{"source":"nap","target":"out"}]}]}`,
	`"edges":[{"source":"in","target":"gate"},{"source":"gate","target":"boom"},{"source":"in","target":"nap"},{"source":"nap","target":"out"}]},
	{"workflowId":"approve","nodes":[
		{"nodeId":"in","type":"MANUAL"},
		{"nodeId":"ask","type":"INPUT_REQUEST","config":{"prompt":"Ship it?","mode":"approval"}},
		{"nodeId":"ship","type":"RESULT","config":{"expression":"'shipped'"}},
		{"nodeId":"halt","type":"FAIL","config":{"message":"rejected"}}],
	 "edges":[{"source":"in","target":"ask"},{"source":"ask","target":"ship","sourcePort":"approved"},{"source":"ask","target":"halt","sourcePort":"rejected"}]}]}`, 1)

// wfTriageSession is the internal session of the triage supervisor: on an
// EVENT signal, TRANSFORM builds the decision's message from the signal
// (the input the event names), and SUPERVISOR_DECISION reports it.
const wfTriageSession = `{"name":"supervisors","workflows":[{"workflowId":"triage","nodes":[
	{"nodeId":"signal","type":"SUPERVISOR_SIGNAL","config":{"kinds":["EVENT"]}},
	{"nodeId":"answer","type":"TRANSFORM","config":{"expression":
		"{\"commands\": [{\"type\": \"AnswerInput\", \"inputId\": payload.signal.data.inputId, \"answer\": {\"approved\": true, \"comment\": \"triaged: \" + payload.signal.data.prompt}}]}"}},
	{"nodeId":"decide","type":"SUPERVISOR_DECISION","config":{"outcome":"SUCCESS","reason":"routine approval"}}],
	"edges":[{"source":"signal","target":"answer"},{"source":"answer","target":"decide"}]}]}`

const wfTriagerDoc = `{"name":"Triage","engine":{"type":"workflow","settings":{"sessionId":"supervisors","workflowId":"triage",
	"events":["InputRequested"],"when":"event.data.prompt.startsWith(\"Ship\")","timeout":30}},
	"owns":["session:ci"],"allowedCommands":["AnswerInput"]}`

// The seed's example: a workflow supervisor triages InputRequested by
// answering the input. The runtime hands it the EVENT; the engine starts
// supervisors/triage in the reserved pool with the signal as payload; the
// workflow's decision (an AnswerInput built from the signal) goes through
// the intake; the ci run gets its answer and finishes. STARTED, which the
// triage workflow's SUPERVISOR_SIGNAL does not take, starts no run. The
// signal handed again (as after a crash) finds the same run and sends
// nothing twice.
func TestWorkflowSupervisorAnswersAnInput(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	cat := registry(t)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(f.pool), cat, time.Now)
	for id, doc := range map[string]string{"ci": wfCISession, "supervisors": wfTriageSession} {
		if _, err := apply.Handle(t.Context(), sessionapp.ApplyInput{ID: id, Document: []byte(doc)}); err != nil {
			t.Fatalf("apply %s: %v", id, err)
		}
	}
	reader := postgres.NewReader(f.pool)
	feed := executionapp.NewFeed(reader, executionapp.FeedInterval, func(err error) { t.Logf("feed: %v", err) })
	ctx, stopFeed := context.WithCancel(context.WithoutCancel(t.Context()))
	feedDone := make(chan struct{})
	go func() { defer close(feedDone); feed.Run(ctx) }()
	t.Cleanup(func() { stopFeed(); <-feedDone })
	workflows := rawWorkflows{postgres.NewSessionStore(f.pool)}
	answer := supervisorapp.NewAnswerReview(supervisorapp.ApplierDeps{Store: f.store, Control: f.control, Start: f.exec.start,
		Supervisors: f.sups, Now: time.Now})
	deps := workflowengine.Deps{Start: f.exec.start, Await: executionapp.NewAwait(feed, reader), Control: f.control,
		Submit: f.submit, Answer: answer, Conditions: f.cond, Workflows: workflows, Now: time.Now,
		OnError: func(id string, err error) { t.Errorf("supervisor %s: %v", id, err) }}
	f.supervisor(t, "triager", wfTriagerDoc)
	stop := f.runtime(t, "a", svRuntimeOptions{engines: map[string]supervisorapp.EngineFactory{"workflow": workflowengine.NewFactory(deps)}})
	f.waitCursor(t, "triager")

	res, err := f.exec.start.Handle(t.Context(), executionapp.StartInput{SessionID: "ci", WorkflowID: "approve",
		Trigger: executionapp.TriggerManual, Actor: "key:dev", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitStatus(t, "SUCCESS", res.ExecutionID)
	var by, answered string
	if err := f.pool.QueryRow(t.Context(), `SELECT answered_by, answer::text FROM inputs WHERE execution_id = $1`, res.ExecutionID).Scan(&by, &answered); err != nil {
		t.Fatal(err)
	}
	if by != "supervisor:triager" || !strings.Contains(answered, `"approved": true`) || !strings.Contains(answered, "triaged: Ship it?") {
		t.Fatalf("the input was answered by %s with %s", by, answered)
	}
	v, err := reader.Execution(t.Context(), "ci", res.ExecutionID)
	if err != nil || v.Result != "shipped" {
		t.Fatalf("the ci run's result: %v, %v", v.Result, err)
	}

	// The run that decided: one, keyed by the signal and started by the
	// supervisor; it ended at SUPERVISOR_DECISION.
	evs, err := reader.Events(t.Context(), executionapp.EventQuery{ExecutionID: res.ExecutionID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var asked executionapp.StoredEvent
	for _, e := range evs {
		if e.Type == "InputRequested" {
			asked = e
		}
	}
	if asked.Seq == 0 {
		t.Fatalf("no InputRequested event among %d", len(evs))
	}
	cursor := supervisorapp.EventCursor(asked)
	key := workflowengine.RunKey("triager", cursor, 1)
	if n := f.count(t, `SELECT count(*) FROM executions WHERE session_id = 'supervisors'`); n != 1 {
		t.Fatalf("%d runs of the triage workflow, want 1 (STARTED must not start one)", n)
	}
	var triage, status, actor string
	if err := f.pool.QueryRow(t.Context(), `SELECT execution_id::text, status, actor FROM executions
		WHERE session_id = 'supervisors' AND workflow_id = 'triage' AND idempotency_key = $1`, key).Scan(&triage, &status, &actor); err != nil {
		t.Fatalf("the triage run keyed %s: %v", key, err)
	}
	if status != "SUCCESS" || actor != "supervisor:triager" {
		t.Fatalf("the triage run: %s by %s", status, actor)
	}
	tv, err := reader.Execution(t.Context(), "supervisors", triage)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := tv.Result.(map[string]any); r["outcome"] != "SUCCESS" || r["reason"] != "routine approval" {
		t.Fatalf("the triage run's result: %v", tv.Result)
	}
	entry, ok, err := f.store.Directive(t.Context(), "triager", workflowengine.DirectiveKey(cursor, 0))
	if err != nil || !ok || entry.Status != supervisorapp.LedgerAccepted {
		t.Fatalf("the directive ledger: %+v, %v, %v", entry, ok, err)
	}

	// Handed again after a crash (no runtime now, a new lease): the same
	// run, the same directive key, no second effect.
	stop()
	fence, ok, err := f.store.Acquire(t.Context(), "triager", "b", 5*time.Second)
	if err != nil || !ok {
		t.Fatalf("take the lease: %v, %v", ok, err)
	}
	data, err := f.redact.Redact(t.Context(), asked)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.sups.Supervisor(t.Context(), "triager")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := workflowengine.NewFactory(deps)(t.Context(), stored.Supervisor, fence, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Handle(t.Context(), supervisor.NewSignal(cursor, supervisorapp.EventSignal(asked, data))); err != nil {
		t.Fatal(err)
	}
	closer := eng.(supervisorapp.EngineCloser)
	svEventually(t, 10*time.Second, func() (bool, string) {
		st, err := eng.State()
		return err == nil && st == nil, "the engine still follows the run: " + string(st)
	})
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	if n := f.count(t, `SELECT count(*) FROM executions WHERE session_id = 'supervisors'`); n != 1 {
		t.Fatalf("%d triage runs after the signal came again, want 1", n)
	}
	if n := f.count(t, `SELECT count(*) FROM events WHERE type = 'DirectiveApplied'`); n != 1 {
		t.Fatalf("%d DirectiveApplied events, want 1: the answer applied once", n)
	}
}
