package e2e

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/yukta/yukta/api/apiclient"
)

// The scope tests: a session-limited key (testKeys["limited"], ADMIN of
// "alpha" only) learns nothing of the other sessions from event stream
// resume ids, /metrics or answering inputs (docs/security.md, "Event
// streams, metrics and inputs").

// sameAnswer fails unless two answers are byte for byte the same once the
// value each request sent (which the answer may quote) reads as "<sent>".
func sameAnswer(t *testing.T, what string, aSent string, aStatus int, aBody []byte, aHdr http.Header,
	bSent string, bStatus int, bBody []byte, bHdr http.Header) {
	t.Helper()
	a := strings.ReplaceAll(string(aBody), aSent, "<sent>")
	b := strings.ReplaceAll(string(bBody), bSent, "<sent>")
	if aStatus != bStatus || a != b || aHdr.Get("Content-Type") != bHdr.Get("Content-Type") {
		t.Errorf("%s: the answers differ:\n  %d %s %s\n  %d %s %s", what, aStatus, aHdr.Get("Content-Type"), aBody,
			bStatus, bHdr.Get("Content-Type"), bBody)
	}
}

// TestScopeEventResumeIDs: a limited key gets the same 400, byte for byte,
// for the seq of another session's event as for a seq of no event, on every
// event stream; its own seqs resume, after the event and inside its sessions.
func TestScopeEventResumeIDs(t *testing.T) {
	e := newAccessEnv(t)
	lim := testKeys["limited"]
	var own, foreign, last int64
	if err := e.db.QueryRow(e.ctx, `SELECT min(seq) FILTER (WHERE session_id = 'alpha'), max(seq) FILTER (WHERE session_id = 'beta'), max(seq)
		FROM events`).Scan(&own, &foreign, &last); err != nil {
		t.Fatal(err)
	}
	none := last + 1000
	streams := []string{
		"/api/events",
		"/api/events?sessionId=alpha",
		"/api/sessions/alpha/executions/" + e.execs["alpha"] + "/events",
	}
	for _, path := range streams {
		fs, fb, fh := call(t, e.s, "GET", path, lim, nil, "Last-Event-ID", strconv.FormatInt(foreign, 10))
		ns, nb, nh := call(t, e.s, "GET", path, lim, nil, "Last-Event-ID", strconv.FormatInt(none, 10))
		if fs != http.StatusBadRequest {
			t.Errorf("GET %s, Last-Event-ID of beta's event %d: %d %s, want 400", path, foreign, fs, fb)
		}
		sameAnswer(t, "GET "+path+": a foreign seq and a seq of no event",
			strconv.FormatInt(foreign, 10), fs, fb, fh, strconv.FormatInt(none, 10), ns, nb, nh)
		if s, b, h := call(t, e.s, "GET", path, lim, nil, "Last-Event-ID", strconv.FormatInt(own, 10)); s != http.StatusOK ||
			!strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
			t.Errorf("GET %s, Last-Event-ID of alpha's event %d: %d %s, want the stream", path, own, s, b)
		}
	}
	// A key of every session may resume after any event.
	if s, b, _ := call(t, e.s, "GET", "/api/events", testKeys["viewer"], nil, "Last-Event-ID", strconv.FormatInt(foreign, 10)); s != http.StatusOK {
		t.Errorf("viewer of every session, Last-Event-ID %d: %d %s, want the stream", foreign, s, b)
	}

	// Resuming after its own first event brings the rest of alpha's events,
	// none of beta's.
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.s.URL+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+lim)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(own, 10))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	evs := readSSE(t, res.Body, waitLimit, func(ev sseEvent) bool {
		return ev.Type == "ExecutionStatusChanged" && ev.Data["data"].(map[string]any)["to"] == "SUCCESS"
	})
	cancel()
	if len(evs) == 0 || evs[len(evs)-1].Type != "ExecutionStatusChanged" {
		t.Fatalf("resumed stream %v, want alpha's run to its end", eventTypes(evs))
	}
	for _, ev := range evs {
		if ev.ID == own || ev.Data["sessionId"] != "alpha" {
			t.Fatalf("resumed stream after %d: %v holds event %d of %v", own, eventTypes(evs), ev.ID, ev.Data["sessionId"])
		}
	}
}

// TestScopeMetrics: /metrics counts every session's work, so a limited key
// gets a 403 that says so, whatever session it names; keys of every session
// get the metrics.
func TestScopeMetrics(t *testing.T) {
	e := newAccessEnv(t)
	for _, path := range []string{"/metrics", "/metrics?sessionId=alpha"} {
		s, b, h := call(t, e.s, "GET", path, testKeys["limited"], nil)
		if s != http.StatusForbidden || h.Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(string(b), "urn:yukta:problem:forbidden") ||
			!strings.Contains(detail(t, b), "key:limited is limited to the sessions alpha and cannot read /metrics") ||
			strings.Contains(string(b), "yukta_") {
			t.Errorf("GET %s with the limited key: %d %s %s, want the documented 403", path, s, h.Get("Content-Type"), b)
		}
	}
	for _, name := range []string{"viewer", "admin"} {
		s, b, _ := call(t, e.s, "GET", "/metrics", testKeys[name], nil)
		if s != http.StatusOK || !strings.Contains(string(b), "yukta_queue_ready") {
			t.Errorf("GET /metrics as %s: %d, want the metrics with the queue gauges: %.300s", name, s, b)
		}
	}
}

// TestScopeAnswerInput: a limited key answers its own input without naming
// the session; another session's input gets the 404 of an input that does
// not exist, byte for byte, with or without sessionId, and stays open.
func TestScopeAnswerInput(t *testing.T) {
	e := newAccessEnv(t)
	ask := wf("ask", []string{nd("start", "MANUAL", ""), nd("ask", "INPUT_REQUEST", `{"prompt":"Ship it?","mode":"approval"}`),
		nd("out", "RESULT", "")}, []string{ed("start", "ask", ""), ed("ask", "out", "approved")})
	inputs := map[string]string{} // session -> its open input
	execs := map[string]string{}
	for _, sid := range []string{"alpha", "beta"} {
		e.apply(sid, ask)
		execs[sid] = e.start(sid, "ask", map[string]any{"n": 1})
		e.waitNode(sid, execs[sid], "ask", "WAITING", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusWAITING })
		list, err := e.c.ListInputsWithResponse(e.ctx, &apiclient.ListInputsParams{SessionId: ptr(sid)})
		if err != nil || list.JSON200 == nil || len(list.JSON200.Inputs) != 1 {
			t.Fatalf("open inputs of %s: %v %s", sid, err, list.Body)
		}
		inputs[sid] = list.JSON200.Inputs[0].InputId
	}
	lim := testKeys["limited"]
	body := []byte(`{"answer":{"approved":true}}`)
	const unknown = "0193b7a0-0000-7000-8000-00000000abcd"

	// The limited key lists only its own input.
	s, b, _ := call(t, e.s, "GET", "/api/inputs?status=all", lim, nil)
	if s != http.StatusOK || !strings.Contains(string(b), inputs["alpha"]) || strings.Contains(string(b), inputs["beta"]) {
		t.Fatalf("limited key's inputs: %d %s, want alpha's only", s, b)
	}

	before := e.counts()
	us, ub, uh := call(t, e.s, "POST", "/api/inputs/"+unknown, lim, body)
	if us != http.StatusNotFound {
		t.Fatalf("unknown input: %d %s, want 404", us, ub)
	}
	for _, q := range []string{"", "?sessionId=beta", "?sessionId=alpha", "?sessionId=gamma"} {
		fs, fb, fh := call(t, e.s, "POST", "/api/inputs/"+inputs["beta"]+q, lim, body)
		sameAnswer(t, "beta's input"+q+" and an unknown input", inputs["beta"], fs, fb, fh, unknown, us, ub, uh)
		ns, nb, nh := call(t, e.s, "POST", "/api/inputs/"+unknown+q, lim, body)
		sameAnswer(t, "an unknown input"+q+" and without a session", unknown, ns, nb, nh, unknown, us, ub, uh)
	}
	e.assertUnchanged("refused answers", before)
	list, _ := e.c.ListInputsWithResponse(e.ctx, &apiclient.ListInputsParams{SessionId: ptr("beta")})
	if list.JSON200 == nil || len(list.JSON200.Inputs) != 1 || list.JSON200.Inputs[0].Status != apiclient.InputStatusOpen {
		t.Fatalf("beta's input after the refused answers: %s, want it still open", list.Body)
	}

	// A key of every session may also name the wrong session: the same 404.
	ws, wb, wh := call(t, e.s, "POST", "/api/inputs/"+inputs["beta"]+"?sessionId=alpha", testKeys["operator"], body)
	sameAnswer(t, "operator naming the wrong session", inputs["beta"], ws, wb, wh, unknown, us, ub, uh)
	// The role is still checked, before the input is looked up.
	if s, b, _ := call(t, e.s, "POST", "/api/inputs/"+inputs["beta"], testKeys["viewer"], body); s != http.StatusForbidden ||
		!strings.Contains(string(b), "OPERATOR or ADMIN") {
		t.Errorf("viewer answering: %d %s, want 403 naming the roles", s, b)
	}

	// Its own input, without sessionId.
	s, b, _ = call(t, e.s, "POST", "/api/inputs/"+inputs["alpha"], lim, body)
	if s != http.StatusOK || !strings.Contains(string(b), `"answered"`) || !strings.Contains(string(b), `"key:limited"`) {
		t.Fatalf("limited key answering its own input: %d %s, want 200 answered by key:limited", s, b)
	}
	e.waitStatus("alpha", execs["alpha"], apiclient.ExecutionStatusSUCCESS)
	// And once more, naming its session: the input is no longer open.
	if s, b, _ := call(t, e.s, "POST", "/api/inputs/"+inputs["alpha"]+"?sessionId=alpha", lim, body); s != http.StatusConflict {
		t.Errorf("second answer naming the session: %d %s, want 409", s, b)
	}
}
