package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// intakeWorld is a keyed server (w.key is the ADMIN's) with sessions ci and
// other, and a supervisor "agent" (engine http, its agent on the agent API)
// that owns owns and may send the commands the tests use.
func newIntakeWorld(t *testing.T, owns string) *agentWorld {
	t.Helper()
	w := newAgentWorld(t, "YUKTA_API_KEYS="+writeKeyFile(t))
	w.key = testKeys["admin"]
	w.put("/api/sessions/ci", napSession("ci"))
	w.put("/api/sessions/other", napSession("other"))
	w.putAgent(owns)
	st, b, _ := call(t, w.s, "POST", "/api/supervisors/agent/credential", w.key, nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("issue a credential: %d %s", st, b)
	}
	w.token = c.Token
	return w
}

// putAgent stores the agent supervisor owning owns (a JSON list's members).
func (w *agentWorld) putAgent(owns string) {
	w.t.Helper()
	w.put("/api/supervisors/agent", []byte(`{"name":"Agent","owns":[`+owns+`],
		"allowedCommands":["PauseWorkflow","StopWorkflow","StopNode","Hold","Release"],"engine":{"type":"http","settings":{}}}`))
}

// runRecords counts the outbox events and journal records of a run, once
// the observer has journaled every event of it.
func (w *agentWorld) runRecords(id string) (events, records int) {
	w.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := w.db.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM events WHERE execution_id = $1::uuid),
			(SELECT count(*) FROM journal_records WHERE execution_id = $1::uuid)`, id).Scan(&events, &records)
		if err != nil {
			w.t.Fatal(err)
		}
		if events == records {
			return events, records
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("run %s: %d events, %d journal records after 20 s", id, events, records)
		}
	}
}

// TestHeldTargetStaysInsideOwnedUnits (issue 21, hole 1): a supervisor
// holds a run, an ADMIN narrows its owns so that the run is no longer
// owned; a StopWorkflow KILL through the held target is refused (as
// through execution:) and the run is not stopped, while Release, through
// held or execution:, still reaches it.
func TestHeldTargetStaysInsideOwnedUnits(t *testing.T) {
	t.Parallel()
	w := newIntakeWorld(t, `"session:ci","session:other"`)
	run := w.napping("other")
	if st, b, _ := w.agent("POST", "/directives", []byte(`{"key":"hold","reason":"wait for the vendor","command":{"type":"Hold","target":"execution:`+run+`"}}`)); st != 202 {
		t.Fatalf("Hold: %d %s", st, b)
	}
	w.waitStatus("other", run, "PAUSED")

	w.putAgent(`"session:ci"`) // the ADMIN narrows owns: the held run is no longer owned

	for _, target := range []string{"held", "execution:" + run} {
		body := fmt.Sprintf(`{"key":"kill-%s","command":{"type":"StopWorkflow","target":%q,"mode":"KILL"}}`, strings.SplitN(target, ":", 2)[0], target)
		st, b, _ := w.agent("POST", "/directives", []byte(body))
		if st != 403 || !strings.Contains(string(b), "outside the units") {
			t.Fatalf("StopWorkflow KILL through %s of a held run no longer owned: %d %s, want 403 naming the owned units", target, st, b)
		}
	}
	if s := w.status("other", run); s != "PAUSED" {
		t.Fatalf("after the refused KILLs the run is %s, want PAUSED", s)
	}
	var stops int
	_ = w.db.QueryRow(context.Background(), `SELECT count(*) FROM commands WHERE execution_id = $1::uuid AND action = 'STOP'`, run).Scan(&stops)
	if stops != 0 {
		t.Fatalf("%d STOP commands reached the run, want 0", stops)
	}
	// Only Release: a pause through held is refused too.
	if st, b, _ := w.agent("POST", "/directives", []byte(`{"key":"pause","command":{"type":"PauseWorkflow","target":"held"}}`)); st != 403 {
		t.Fatalf("PauseWorkflow through held of a run no longer owned: %d %s, want 403", st, b)
	}
	st, b, _ := w.agent("POST", "/directives", []byte(`{"key":"release","command":{"type":"Release","target":"held"}}`))
	if st != 202 || !strings.Contains(string(b), "resumed") {
		t.Fatalf("Release through held of a run no longer owned: %d %s, want 202 and the run resumed", st, b)
	}
	w.waitStatus("other", run, "RUNNING")
	if st, b, _ := w.agent("POST", "/directives", []byte(`{"key":"release-2","command":{"type":"Release","target":"execution:`+run+`"}}`)); st != 403 {
		t.Fatalf("Release through execution: of a run it neither owns nor holds any more: %d %s, want 403", st, b)
	}
}

// waitStatus waits until the run has the status.
func (w *agentWorld) waitStatus(session, id, status string) {
	w.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); w.status(session, id) != status; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.t.Fatalf("run %s is %s after 20 s, want %s", id, w.status(session, id), status)
		}
	}
}

type refusalPage struct {
	Refusals []struct {
		SupervisorID string `json:"supervisorId"`
		Key          string
		At           time.Time
		Channel      string
		Refusal      string
		Message      string
		Directive    map[string]any
	}
	NextCursor string `json:"nextCursor"`
}

// TestRefusalsStayWithTheSender (issue 21, hole 4): directives of a
// supervisor that owns session ci, aimed at a run of session other (one
// at the run, one with 200 node targets in it), are refused without a
// single event or journal record in that run; each request is one refusal
// record in the sender's own trail, which an ADMIN reads over REST and the
// supervisor over the agent API, newest first, page by page.
func TestRefusalsStayWithTheSender(t *testing.T) {
	t.Parallel()
	w := newIntakeWorld(t, `"session:ci"`)
	foreign := w.napping("other")
	events, records := w.runRecords(foreign)

	nodes := make([]string, 200)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s/n%d", foreign, i)
	}
	bodies := []string{
		`{"key":"pause-foreign","reason":"my text","command":{"type":"PauseWorkflow","target":"execution:` + foreign + `"}}`,
		`{"key":"stop-nodes","reason":"my text","command":{"type":"StopNode","target":"node:` + strings.Join(nodes, ",") + `"}}`,
	}
	for _, body := range bodies {
		for range 2 { // the same key twice: one refusal
			if st, b, _ := w.agent("POST", "/directives", []byte(body)); st != 403 {
				t.Fatalf("a directive at a foreign run: %d %.300s, want 403", st, b)
			}
		}
	}
	if st, b, _ := w.agent("POST", "/directives", []byte(`{"key":"stop-nodes","command":{"type":"StopNode","target":"node:`+foreign+`/x"}}`)); st != 409 {
		t.Fatalf("a refused key reused for another directive: %d %s, want 409", st, b)
	}
	if e, r := w.runRecords(foreign); e != events || r != records {
		t.Fatalf("the foreign run went from %d events and %d journal records to %d and %d, want no new record", events, records, e, r)
	}

	check := func(who string, p refusalPage) {
		t.Helper()
		if len(p.Refusals) != 2 {
			t.Fatalf("%s: %d refusals, want 2 (one per request): %+v", who, len(p.Refusals), p)
		}
		for i, key := range []string{"stop-nodes", "pause-foreign"} { // newest first
			r := p.Refusals[i]
			if r.Key != key || r.SupervisorID != "agent" || r.Channel != "agent" || r.Refusal != "refused" ||
				!strings.Contains(r.Message, "outside the units") || r.At.IsZero() || r.Directive["key"] != key {
				t.Fatalf("%s: refusal %d is %+v, want key %s with its directive, channel, kind, time and reason", who, i, r, key)
			}
		}
	}
	read := func(who, path, key string) refusalPage {
		t.Helper()
		st, b, _ := call(t, w.s, "GET", path, key, nil)
		var p refusalPage
		if st != 200 || json.Unmarshal(b, &p) != nil {
			t.Fatalf("%s GET %s: %d %s", who, path, st, b)
		}
		return p
	}
	check("ADMIN", read("ADMIN", "/api/supervisors/agent/refusals", w.key))
	check("agent", read("agent", "/api/agent/v1/refusals", w.token))

	// Paging: one a page, the cursor of the first leads to the second.
	first := read("ADMIN", "/api/supervisors/agent/refusals?limit=1", w.key)
	if len(first.Refusals) != 1 || first.Refusals[0].Key != "stop-nodes" || first.NextCursor == "" {
		t.Fatalf("the first page of one: %+v", first)
	}
	second := read("agent", "/api/agent/v1/refusals?limit=1&cursor="+first.NextCursor, w.token)
	if len(second.Refusals) != 1 || second.Refusals[0].Key != "pause-foreign" {
		t.Fatalf("the second page of one: %+v", second)
	}
	for _, q := range []string{"?limit=0", "?limit=501", "?cursor=nonsense"} {
		if st, b, _ := call(t, w.s, "GET", "/api/supervisors/agent/refusals"+q, w.key, nil); st != 400 {
			t.Errorf("GET refusals%s: %d %s, want 400", q, st, b)
		}
	}
	// The trail is an ADMIN's to read (the directive's reason is the
	// supervisor's text), and a supervisor's own.
	if st, b, _ := call(t, w.s, "GET", "/api/supervisors/agent/refusals", testKeys["operator"], nil); st != 403 {
		t.Fatalf("an OPERATOR reading the refusals: %d %s, want 403", st, b)
	}
	if st, b, _ := call(t, w.s, "GET", "/api/supervisors/nobody/refusals", w.key, nil); st != 404 {
		t.Fatalf("the refusals of a supervisor that does not exist: %d %s, want 404", st, b)
	}
}

// TestForeignReviewsAndDelegationsAnswerAsUnknown (issue 21, hole 10): a
// supervisor answering a review it was never asked, or a delegation not
// sent to it, learns nothing: not whether it exists, not its state, not
// the other supervisor's name. It gets exactly the answer of an id that
// does not exist.
func TestForeignReviewsAndDelegationsAnswerAsUnknown(t *testing.T) {
	t.Parallel()
	w := newAgentWorld(t)
	w.setup() // "agent" owns session ci and reviews StopWorkflow
	w.put("/api/sessions/other", napSession("other"))
	w.put("/api/supervisors/other", []byte(`{"name":"Other","owns":["session:other"],"engine":{"type":"http","settings":{}}}`))
	st, b, _ := call(t, w.s, "POST", "/api/supervisors/other/credential", w.key, nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("issue a credential: %d %s", st, b)
	}
	other := *w
	other.token = c.Token
	const unknown = "01a23399-0000-7000-8000-000000000000"
	same := func(what, foreignID string, foreign func(id string) (int, []byte)) {
		t.Helper()
		fs, fb := foreign(foreignID)
		us, ub := foreign(unknown)
		if fs != us || fs != 404 || strings.ReplaceAll(detail(t, fb), foreignID, unknown) != detail(t, ub) {
			t.Fatalf("%s: the foreign one answered %d %s; an unknown one %d %s; want the same 404", what, fs, fb, us, ub)
		}
		for _, leak := range []string{"agent", "PENDING", "DENIED", "OPEN", "ANSWERED", "waiting"} {
			if strings.Contains(string(fb), leak) {
				t.Fatalf("%s: the answer %s tells %q", what, fb, leak)
			}
		}
	}

	// A review asked of "agent".
	id := w.napping("ci")
	st, b = w.stop("ci", id, 0)
	var ticket struct{ ReviewID string }
	if st != 202 || json.Unmarshal(b, &ticket) != nil || ticket.ReviewID == "" {
		t.Fatalf("a reviewed STOP: %d %s", st, b)
	}
	answerReview := func(id string) (int, []byte) {
		st, b, _ := other.agent("POST", "/reviews/"+id, []byte(`{"verdict":"ALLOW"}`))
		return st, b
	}
	same("a pending review asked of another supervisor", ticket.ReviewID, answerReview)
	if st, b, _ := w.agent("POST", "/reviews/"+ticket.ReviewID, []byte(`{"verdict":"DENY","reason":"mine"}`)); st != 200 {
		t.Fatalf("the asked supervisor's verdict: %d %s", st, b)
	}
	same("a decided review asked of another supervisor", ticket.ReviewID, answerReview)
	if st, b, _ := w.agent("POST", "/reviews/"+ticket.ReviewID, []byte(`{"verdict":"ALLOW"}`)); st != 409 {
		t.Fatalf("the asked supervisor answering its decided review again: %d %s, want 409", st, b)
	}

	// A delegation "agent" sent to "lead".
	w.put("/api/supervisors/lead", []byte(`{"name":"Lead","owns":["session:ci"],"engine":{"type":"http","settings":{}}}`))
	st, b, _ = w.agent("POST", "/delegations", []byte(`{"kind":"CONSULT","key":"ask-lead","to":"lead","payload":{"q":"stop?"}}`))
	var d struct{ DelegationID string }
	if st != 201 || json.Unmarshal(b, &d) != nil {
		t.Fatalf("consult lead: %d %s", st, b)
	}
	answerDelegation := func(id string) (int, []byte) {
		st, b, _ := other.agent("POST", "/delegations/"+id, []byte(`{"answer":{"stop":true}}`))
		return st, b
	}
	same("a delegation sent to another supervisor", d.DelegationID, answerDelegation)
	// Its sender is not its target either.
	sent := func(id string) (int, []byte) {
		st, b, _ := w.agent("POST", "/delegations/"+id, []byte(`{"answer":{"stop":true}}`))
		return st, b
	}
	same("a delegation answered by its sender", d.DelegationID, sent)
}
