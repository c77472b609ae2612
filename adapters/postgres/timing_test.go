package postgres_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/journal"
)

// TestFailingNodeTiming: a node's timing is its plugin's own. An
// HTTP_REQUEST whose endpoint holds every call for 60 ms and then hangs up
// fails each attempt after at least 60 ms; it is tried twice, 300 ms apart.
// Its failure is committed at one instant, so commit times would show 0;
// the status API must show startedAt at the first attempt's start, endedAt
// at the second attempt's end, and wallMs at least 120 (the two runs, not
// the wait between them), and the journal's projection the same values.
// The FAILURE event carries the failing attempt.
func TestFailingNodeTiming(t *testing.T) {
	t.Parallel()
	const hold = 60 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(hold)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close() // no answer at all: the attempt fails
		}
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	f := newModelFixture(t)
	if f.runners, err = plugins.NewRunners(plugins.RunnerConfig{EgressOptions: egress.Options{AllowedHosts: []string{u.Host}}}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	doc := `{"sessionId":"timing","name":"timing","workflows":[{"workflowId":"slow","nodes":[
		{"nodeId":"start","type":"MANUAL"},
		{"nodeId":"call","type":"HTTP_REQUEST","config":{"url":"` + srv.URL + `/hold","retry":{"maxAttempts":2,"backoff":"300ms"}}},
		{"nodeId":"out","type":"RESULT"}],
		"edges":[{"source":"start","target":"call"},{"source":"call","target":"out"}]}]}`
	if _, err := f.apply.Handle(ctx, sessionapp.ApplyInput{ID: "timing", Document: []byte(doc), Actor: "test", Channel: "rest"}); err != nil {
		t.Fatal(err)
	}
	in := f.startInstance("timing-test")
	defer in.stop(false)
	res, err := f.start.Handle(ctx, executionapp.StartInput{SessionID: "timing", WorkflowID: "slow", Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitEnded(t, f.pool, []string{res.ExecutionID}); got[res.ExecutionID] != "FAILURE" {
		t.Fatalf("status %v, want FAILURE", got)
	}

	live, err := f.reader.Execution(ctx, "timing", res.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	node := func(id string) executionapp.NodeView {
		i := slices.IndexFunc(live.Nodes, func(n executionapp.NodeView) bool { return n.NodeID == id })
		if i < 0 {
			t.Fatalf("no node %s in %+v", id, live.Nodes)
		}
		return live.Nodes[i]
	}
	call := node("call")
	wall := call.RunTime.Milliseconds()
	span := call.EndedAt.Sub(call.StartedAt)
	switch {
	case call.Status != execution.NodeFailure || call.StartedAt.IsZero() || call.EndedAt.IsZero():
		t.Fatalf("call = %+v, want FAILURE with startedAt and endedAt", call)
	case wall < 2*hold.Milliseconds():
		t.Errorf("call wallMs = %d, want at least %d: two attempts of at least %s each", wall, 2*hold.Milliseconds(), hold)
	case span < 300*time.Millisecond+2*hold:
		t.Errorf("call ran from %v to %v (%s), want at least the 300 ms backoff and both attempts apart", call.StartedAt, call.EndedAt, span)
	case call.RunTime > span-250*time.Millisecond:
		t.Errorf("call wallMs = %d of a %s span: the wait between the attempts counted", wall, span)
	}
	t.Logf("call: startedAt %v, endedAt %v (%s apart), wallMs %d", call.StartedAt, call.EndedAt, span, wall)
	// RESULT never got a message: it never ran, and its end is when the
	// failure cut it.
	if out := node("out"); out.Status != execution.NodeSkipped || !out.StartedAt.IsZero() || out.RunTime != 0 || out.EndedAt.Before(call.EndedAt) {
		t.Errorf("out = %+v, want SKIPPED, never started, wallMs 0, ended after call", out)
	}

	m := &modelCase{f: f, ctx: ctx, sid: "timing", execs: []string{res.ExecutionID}}
	m.waitObserved(t)
	lines, _ := m.journal(t, res.ExecutionID)
	var records []journal.Record
	for _, l := range lines {
		r, err := journal.ParseRecord(l)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, r)
	}
	p := journal.Project(records)
	if d := modelProjectionMismatch(p, live); d != "" {
		t.Fatalf("projection differs from the live status: %s", d)
	}
	i := slices.IndexFunc(p.Nodes, func(n journal.NodeView) bool { return n.ID == "call" })
	if pc := p.Nodes[i]; pc.Status != journal.StatusDown || pc.WallMs == nil || *pc.WallMs < 2*hold.Milliseconds() {
		t.Errorf("projected call = %+v, want down with wallMs ≥ %d", pc, 2*hold.Milliseconds())
	}

	// The event that failed the node carries its last attempt.
	var data map[string]any
	for _, r := range records {
		if r.Event["type"] == executionapp.EventNodeStatusChanged && r.Event["nodeId"] == "call" {
			if d, _ := r.Event["data"].(map[string]any); d["to"] == "FAILURE" {
				data = d
			}
		}
	}
	if data == nil {
		t.Fatal("no NodeStatusChanged to FAILURE for call in the journal")
	}
	began, err1 := time.Parse(time.RFC3339Nano, jsonString(data["attemptStartedAt"]))
	ended, err2 := time.Parse(time.RFC3339Nano, jsonString(data["attemptEndedAt"]))
	n, _ := data["attemptWallMs"].(json.Number) // as journal records decode numbers
	attemptMs, err3 := n.Int64()
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("FAILURE event data %v: want attemptStartedAt, attemptEndedAt and attemptWallMs", data)
	}
	if !ended.Equal(call.EndedAt) || ended.Sub(began) < hold || attemptMs != ended.Sub(began).Milliseconds() ||
		!began.After(call.StartedAt.Add(300*time.Millisecond)) {
		t.Errorf("FAILURE event attempt %v–%v (%v ms), want the second attempt: after the backoff, at least %s, ending at endedAt %v",
			began, ended, attemptMs, hold, call.EndedAt)
	}
}

func jsonString(v any) string {
	s, _ := v.(string)
	return s
}
