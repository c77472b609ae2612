package mcpserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/application/sessionapp"
)

// askSession has one workflow that parks on an approval prompt and ends in
// a RESULT when approved.
const askSession = `{"sessionId":"ask","name":"Ask","workflows":[{"workflowId":"approve","nodes":[
	{"nodeId":"start","type":"MANUAL"},
	{"nodeId":"ask","type":"INPUT_REQUEST","config":{"prompt":"Refund order 7?","mode":"approval"}},
	{"nodeId":"yes","type":"RESULT"},{"nodeId":"no","type":"RESULT"}],
	"edges":[{"source":"start","target":"ask"},{"source":"ask","target":"yes","sourcePort":"approved"},{"source":"ask","target":"no","sourcePort":"rejected"}]}]}`

// TestInputAndJournalTools lists an open input, answers it (a VIEWER may
// not), sees the run finish, reads its journal a page at a time and
// verifies it, all over MCP with the engine and the observer running.
func TestInputAndJournalTools(t *testing.T) {
	t.Parallel()
	ts, env := newTestServer(t)
	ctx := context.Background()
	if _, err := env.deps.ApplySession.Handle(ctx, sessionapp.ApplyInput{ID: "ask", Document: []byte(askSession), Actor: "key:admin", Channel: Channel}); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 2)
	t.Cleanup(func() { stop(); <-done; <-done })
	go func() { defer func() { done <- struct{}{} }(); _ = env.engine.Run(runCtx) }()
	opool, err := postgres.NewPool(env.dsn, postgres.PoolOptions{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(opool.Close)
	obs, err := journalapp.NewObserver(postgres.NewJournalTransactor(opool), env.journalKey, time.Now,
		journalapp.ObserverConfig{Poll: 10 * time.Millisecond}, func(err error) { zap.NewNop().Warn(err.Error()) })
	if err != nil {
		t.Fatal(err)
	}
	go func() { defer func() { done <- struct{}{} }(); obs.Run(runCtx) }()

	viewer := connect(t, ts.URL, secretOf("viewer"))
	operator := connect(t, ts.URL, secretOf("operator"))
	var st StartOut
	decode(t, callOK(t, operator, "start_workflow", map[string]any{"sessionId": "ask", "workflowId": "approve"}), &st)
	exec := map[string]any{"sessionId": "ask", "executionId": st.ExecutionID}

	// The node parks: one open input.
	var list InputList
	deadline := time.Now().Add(20 * time.Second)
	for {
		list = InputList{}
		decode(t, callOK(t, viewer, "list_inputs", exec), &list)
		if len(list.Inputs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no open input after 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	in := list.Inputs[0]
	if len(list.Inputs) != 1 || in.Status != "open" || in.NodeID != "ask" || in.Prompt != "Refund order 7?" || in.ExecutionID != st.ExecutionID || in.SessionID != "ask" {
		t.Fatalf("list_inputs = %+v, want the one open input of ask", list)
	}
	var all InputList
	decode(t, callOK(t, viewer, "list_inputs", map[string]any{}), &all)
	if len(all.Inputs) != 1 || all.Inputs[0].InputID != in.InputID {
		t.Errorf("list_inputs without a session = %+v, want the one input", all)
	}
	if res := call(t, viewer, "list_inputs", map[string]any{"executionId": st.ExecutionID}); !res.IsError || !strings.Contains(text(res), "sessionId") {
		t.Errorf("list_inputs with executionId only: %v %q, want a validation error", res.IsError, text(res))
	}

	// A VIEWER may not answer; nothing changes.
	answer := map[string]any{"inputId": in.InputID, "answer": map[string]any{"approved": true, "ticket": 9007199254740993}}
	if res := call(t, viewer, "answer_input", answer); !res.IsError || !strings.HasPrefix(text(res), "Forbidden: key:viewer has the role VIEWER") {
		t.Errorf("viewer answer_input: %v %q, want refused", res.IsError, text(res))
	}
	list = InputList{}
	decode(t, callOK(t, viewer, "list_inputs", exec), &list)
	if len(list.Inputs) != 1 {
		t.Fatalf("after the refused answer: %+v, want the input still open", list)
	}
	// An unknown input, and a wrong session, read as not found.
	if res := call(t, operator, "answer_input", map[string]any{"inputId": "00000000-0000-4000-8000-000000000001", "answer": true}); !res.IsError ||
		text(res) != "Input not found: 00000000-0000-4000-8000-000000000001. Use list_inputs to see the open inputs." {
		t.Errorf("unknown input: %q", text(res))
	}
	if res := call(t, operator, "answer_input", map[string]any{"inputId": in.InputID, "sessionId": "own", "answer": true}); !res.IsError || !strings.HasPrefix(text(res), "Input not found") {
		t.Errorf("input of another session: %q", text(res))
	}

	res := callOK(t, operator, "answer_input", answer)
	var out AnswerOut
	decode(t, res, &out)
	if out.Input.Status != "answered" || out.Input.AnsweredBy != "key:operator" || out.Input.InputID != in.InputID || out.Next == "" {
		t.Errorf("answer_input = %+v", out)
	}
	if !strings.Contains(text(res), "9007199254740993") {
		t.Errorf("answer_input text %q lost the exact number", text(res))
	}
	if res := call(t, operator, "answer_input", answer); !res.IsError || !strings.Contains(text(res), "not open") {
		t.Errorf("second answer: %v %q, want a conflict", res.IsError, text(res))
	}

	// The run finishes.
	var status ExecutionStatus
	for {
		decode(t, callOK(t, viewer, "get_workflow_status", exec), &status)
		if status.Terminal {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution still %s", status.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status.Status != "SUCCESS" {
		t.Fatalf("execution ended %s: %s", status.Status, status.Error)
	}
	list = InputList{}
	decode(t, callOK(t, viewer, "list_inputs", exec), &list)
	if len(list.Inputs) != 0 {
		t.Errorf("open inputs after the answer: %+v", list)
	}
	list = InputList{}
	decode(t, callOK(t, viewer, "list_inputs", map[string]any{"sessionId": "ask", "status": "all"}), &list)
	if len(list.Inputs) != 1 || list.Inputs[0].Status != "answered" {
		t.Errorf("all inputs after the answer: %+v", list)
	}

	// The journal settles: VALID, then read in pages of 3.
	var v JournalVerification
	deadline = time.Now().Add(20 * time.Second)
	for {
		v = JournalVerification{}
		decode(t, callOK(t, viewer, "verify_journal", exec), &v)
		if v.Result == "VALID" && v.LagEvents == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("verify_journal = %+v, want VALID", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v.Sequence < 4 || v.ChainTip == "" {
		t.Errorf("verify_journal = %+v", v)
	}
	var seqs []int64
	after, pages := int64(0), 0
	var last JournalPage
	for {
		last = JournalPage{}
		decode(t, callOK(t, viewer, "get_execution_journal", map[string]any{"sessionId": "ask", "executionId": st.ExecutionID, "afterSequence": after, "limit": 3}), &last)
		pages++
		if len(last.Records) > 3 {
			t.Fatalf("page of %d records, limit 3", len(last.Records))
		}
		for _, r := range last.Records {
			n, _ := r["sequence"].(float64)
			seqs = append(seqs, int64(n))
			if r["executionId"] != st.ExecutionID || r["digest"] == nil {
				t.Errorf("record %v", r)
			}
		}
		if last.NextAfterSequence == 0 {
			break
		}
		if pages > 100 {
			t.Fatal("journal pages do not end")
		}
		after = last.NextAfterSequence
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("journal sequences %v, want 1.. contiguous", seqs)
		}
	}
	if int64(len(seqs)) != v.Sequence || last.LastSequence != v.Sequence || pages < 2 {
		t.Errorf("read %d records in %d pages (last %d), verified %d", len(seqs), pages, last.LastSequence, v.Sequence)
	}
	if last.Checkpoint == nil || last.Checkpoint["digest"] != v.ChainTip {
		t.Errorf("last page checkpoint %v, want one naming the tip %s", last.Checkpoint, v.ChainTip)
	}
	if res := call(t, viewer, "get_execution_journal", map[string]any{"sessionId": "ask", "executionId": st.ExecutionID, "limit": 501}); !res.IsError {
		t.Errorf("limit 501 accepted")
	}
}
