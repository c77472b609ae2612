package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// napSession: every run waits two minutes at "nap", so a STOP has a live
// run to act on.
func napSession(id string) []byte {
	return []byte(`{"name":"` + id + `","workflows":[{"workflowId":"nap","nodes":[
	{"nodeId":"in","type":"MANUAL"},{"nodeId":"nap","type":"DELAY","config":{"duration":"120s"}},{"nodeId":"out","type":"RESULT"}],
	"edges":[{"source":"in","target":"nap"},{"source":"nap","target":"out"}]}]}`)
}

// reviewWorld is one server with a napping run per session.
type reviewWorld struct {
	t  *testing.T
	s  *server
	db *pgxpool.Pool
	// key is the key the world's own requests send ("" in open mode).
	key string
}

func newReviewWorld(t *testing.T, env ...string) *reviewWorld {
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: env})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return &reviewWorld{t: t, s: s, db: db}
}

// in is w reporting to t (a subtest).
func (w *reviewWorld) in(t *testing.T) *reviewWorld {
	c := *w
	c.t = t
	return &c
}

func (w *reviewWorld) put(path string, body []byte) {
	w.t.Helper()
	if st, b, _ := call(w.t, w.s, "PUT", path, w.key, body); st != 201 && st != 200 {
		w.t.Fatalf("PUT %s: %d %s", path, st, b)
	}
}

// napping starts a run of session's nap workflow and waits until it runs.
func (w *reviewWorld) napping(session string) string {
	w.t.Helper()
	st, b, _ := call(w.t, w.s, "POST", "/api/sessions/"+session+"/workflows/nap/executions", w.key, []byte(`{"payload":{}}`))
	var out struct{ ExecutionId string }
	if st != 201 || json.Unmarshal(b, &out) != nil {
		w.t.Fatalf("start in %s: %d %s", session, st, b)
	}
	// Napping: the trigger node is done and nothing else moves for two
	// minutes, so any change a test sees is the command's.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var in string
		_ = w.db.QueryRow(context.Background(), `SELECT status FROM execution_nodes WHERE execution_id = $1::uuid AND node_id = 'in'`,
			out.ExecutionId).Scan(&in)
		if in == "SUCCESS" && w.status(session, out.ExecutionId) == "RUNNING" {
			return out.ExecutionId
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("run %s never ran", out.ExecutionId)
		}
	}
}

func (w *reviewWorld) status(session, id string) string {
	_, b, _ := call(w.t, w.s, "GET", "/api/sessions/"+session+"/executions/"+id, w.key, nil)
	var out struct{ Status string }
	_ = json.Unmarshal(b, &out)
	return out.Status
}

// rows counts what a command would change for a run: its commands, its
// node rows not RUNNING/PENDING, and the run rows not RUNNING.
func (w *reviewWorld) rows(id string) [3]int {
	w.t.Helper()
	var n [3]int
	err := w.db.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM commands WHERE execution_id = $1::uuid),
		(SELECT count(*) FROM execution_nodes WHERE execution_id = $1::uuid AND status NOT IN ('RUNNING', 'PENDING')),
		(SELECT count(*) FROM executions WHERE execution_id = $1::uuid AND status <> 'RUNNING')`, id).Scan(&n[0], &n[1], &n[2])
	if err != nil {
		w.t.Fatal(err)
	}
	return n
}

// stop sends an operator's STOP (CANCEL) with a wait.
func (w *reviewWorld) stop(session, id string, wait int) (int, []byte) {
	body, _ := json.Marshal(map[string]any{"action": "STOP", "mode": "CANCEL", "reason": "operator stop", "wait": wait})
	st, b, _ := call(w.t, w.s, "POST", "/api/sessions/"+session+"/executions/"+id+"/control", w.key, body)
	return st, b
}

func (w *reviewWorld) review(id string) map[string]any {
	w.t.Helper()
	st, b, _ := call(w.t, w.s, "GET", "/api/approvals/"+id, w.key, nil)
	var out map[string]any
	if st != 200 || json.Unmarshal(b, &out) != nil {
		w.t.Fatalf("GET approval %s: %d %s", id, st, b)
	}
	return out
}

// journalHas waits until the run's journal holds every want (substrings
// of its records) and, with valid, verifies VALID (a run's journal is
// signed once the run has ended).
func (w *reviewWorld) journalHas(session, id string, valid bool, want ...string) string {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, j, _ := call(w.t, w.s, "GET", "/api/sessions/"+session+"/executions/"+id+"/journal", w.key, nil)
		_, v, _ := call(w.t, w.s, "GET", "/api/sessions/"+session+"/executions/"+id+"/journal/verify", w.key, nil)
		missing := ""
		for _, s := range want {
			if !strings.Contains(string(j), s) {
				missing = s
				break
			}
		}
		if missing == "" && (!valid || strings.Contains(string(v), `"result":"VALID"`)) {
			return string(j)
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("journal of %s: missing %q or not VALID (%s): %.3000s", id, missing, v, j)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReviewsOnTheRealServer: supervisors that review STOP answer DENY (the
// operator's STOP is refused with the reason and nothing changes),
// REQUIRE_APPROVAL (the STOP waits until an ADMIN approves, then applies),
// and no opinion (the parent decides, though it owns another session);
// every step is in the run's journal with its actor, and the journal
// verifies VALID.
func TestReviewsOnTheRealServer(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t)
	for _, s := range []string{"deny", "approve", "child", "elsewhere"} {
		w.put("/api/sessions/"+s, napSession(s))
	}
	w.put("/api/supervisors/gate", []byte(`{"name":"Gate","owns":["session:deny"],"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
		{"id":"no-stops","deny":{"command":"StopWorkflow","if":"actor != 'nobody'","reason":"stops need a change ticket"}}]}}}`))
	w.put("/api/supervisors/approver", []byte(`{"name":"Approver","owns":["session:approve"],"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
		{"id":"ask-a-person","requireApproval":{"command":"StopWorkflow","reason":"a person decides stops"}}]}}}`))
	w.put("/api/supervisors/ops", []byte(`{"name":"Ops","owns":["session:elsewhere"],"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
		{"id":"parent-says-no","deny":{"command":"StopWorkflow","reason":"the parent says no"}}]}}}`))
	// The child's condition cannot be evaluated (no such argument): its
	// verdict is no opinion, so its parent decides.
	w.put("/api/supervisors/child", []byte(`{"name":"Child","owns":["session:child"],"parentId":"ops","engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
		{"id":"unsure","deny":{"command":"StopWorkflow","if":"command.args.ticket == 'x'"}}]}}}`))

	type journaled struct {
		session, id string
		want        []string
	}
	var runs []journaled

	t.Run("DENY refuses the STOP and changes nothing", func(t *testing.T) {
		w := w.in(t)
		id := w.napping("deny")
		before := w.rows(id)
		st, b := w.stop("deny", id, 8)
		if st != 403 || !strings.Contains(string(b), "stops need a change ticket") || !strings.Contains(string(b), "supervisor:gate") {
			t.Fatalf("STOP under a DENY rule: %d %s, want 403 naming supervisor:gate and its reason", st, b)
		}
		if after := w.rows(id); after != before || w.status("deny", id) != "RUNNING" {
			t.Fatalf("rows before %v, after %v (status %s): a denied STOP changed something", before, after, w.status("deny", id))
		}
		runs = append(runs, journaled{"deny", id, []string{`"type":"ReviewRequested"`, `"actor":"anonymous"`, `"move":"DENY"`, `"actor":"supervisor:gate"`}})
	})

	t.Run("REQUIRE_APPROVAL parks the STOP until an ADMIN approves", func(t *testing.T) {
		w := w.in(t)
		id := w.napping("approve")
		st, b := w.stop("approve", id, 0)
		var ticket struct{ ReviewId, Status string }
		if st != 202 || json.Unmarshal(b, &ticket) != nil || ticket.ReviewId == "" {
			t.Fatalf("STOP under review: %d %s, want 202 with a ticket", st, b)
		}
		for deadline := time.Now().Add(15 * time.Second); w.review(ticket.ReviewId)["status"] != "AWAITING_APPROVAL"; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("review %s never asked for approval: %v", ticket.ReviewId, w.review(ticket.ReviewId))
			}
		}
		_, lb, _ := call(t, w.s, "GET", "/api/approvals", "", nil)
		if !strings.Contains(string(lb), ticket.ReviewId) {
			t.Fatalf("GET /api/approvals does not list %s: %s", ticket.ReviewId, lb)
		}
		if s := w.status("approve", id); s != "RUNNING" {
			t.Fatalf("the run is %s while its STOP waits for approval", s)
		}
		st, b, _ = call(t, w.s, "POST", "/api/approvals/"+ticket.ReviewId, "", []byte(`{"decision":"APPROVE","reason":"change ticket 42"}`))
		var rev struct {
			Status  string
			Outcome map[string]any
		}
		if st != 200 || json.Unmarshal(b, &rev) != nil || rev.Status != "APPLIED" || rev.Outcome["commandId"] == nil {
			t.Fatalf("approve: %d %s, want 200 APPLIED with the command's outcome", st, b)
		}
		if s := w.status("approve", id); s != "STOPPED" {
			t.Fatalf("after the approval the run is %s, want STOPPED", s)
		}
		st, b, _ = call(t, w.s, "POST", "/api/approvals/"+ticket.ReviewId, "", []byte(`{"decision":"REJECT"}`))
		if st != 409 || !strings.Contains(string(b), "already APPLIED") {
			t.Fatalf("deciding twice: %d %s, want 409", st, b)
		}
		runs = append(runs, journaled{"approve", id, []string{`"type":"ReviewRequested"`, `"move":"REQUIRE_APPROVAL"`, `"actor":"supervisor:approver"`,
			`"move":"APPROVE"`, `"reason":"change ticket 42"`, `"move":"APPLIED"`, `"type":"CommandApplied"`}})
	})

	t.Run("no opinion goes to the parent", func(t *testing.T) {
		w := w.in(t)
		id := w.napping("child")
		st, b := w.stop("child", id, 8)
		if st != 403 || !strings.Contains(string(b), "the parent says no") || !strings.Contains(string(b), "supervisor:ops") {
			t.Fatalf("STOP the child has no opinion on: %d %s, want 403 from the parent ops", st, b)
		}
		if w.status("child", id) != "RUNNING" {
			t.Fatal("a STOP the parent denied stopped the run")
		}
		runs = append(runs, journaled{"child", id, []string{`"move":"NO_OPINION"`, `"escalatedFrom":"supervisor:child"`, `"actor":"supervisor:ops"`}})
	})

	// With the supervisors gone the runs can be stopped; their journals
	// are then signed and must verify VALID with every review step in them.
	for _, id := range []string{"gate", "approver", "child", "ops"} {
		if st, b, _ := call(t, w.s, "DELETE", "/api/supervisors/"+id, "", nil); st != 200 {
			t.Fatalf("delete %s: %d %s", id, st, b)
		}
	}
	for _, r := range runs {
		if r.session != "approve" {
			if st, b := w.stop(r.session, r.id, 8); st != 200 {
				t.Fatalf("STOP without reviewers: %d %s", st, b)
			}
		}
		w.journalHas(r.session, r.id, true, r.want...)
	}
}

// TestReviewTimeoutTakesTheDefault: a reviewer that never answers (an http
// supervisor whose agent is not running) lets the review time out to the
// configured default, DENY here.
func TestReviewTimeoutTakesTheDefault(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t, "YUKTA_REVIEW_TIMEOUT=2s", "YUKTA_REVIEW_DEFAULT=DENY")
	w.put("/api/sessions/quiet", napSession("quiet"))
	w.put("/api/supervisors/silent", []byte(`{"name":"Silent agent","owns":["session:quiet"],"reviews":["StopWorkflow"],
		"engine":{"type":"http","settings":{"url":"https://agent.example.com/signals"}}}`))
	id := w.napping("quiet")
	before := w.rows(id)
	start := time.Now()
	st, b := w.stop("quiet", id, 8)
	if st != 403 || !strings.Contains(string(b), "did not answer within 2s") || !strings.Contains(string(b), "DENY") {
		t.Fatalf("STOP reviewed by a silent supervisor: %d %s, want 403 by the default DENY after 2s", st, b)
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Fatalf("the default applied after %s, before the 2s timeout", waited)
	}
	if w.rows(id) != before {
		t.Fatal("a STOP denied by the default changed the run")
	}
	if st, b, _ := call(t, w.s, "DELETE", "/api/supervisors/silent", "", nil); st != 200 {
		t.Fatalf("delete: %d %s", st, b)
	}
	if st, b := w.stop("quiet", id, 8); st != 200 {
		t.Fatalf("STOP without reviewers: %d %s", st, b)
	}
	w.journalHas("quiet", id, true, `"move":"TIMEOUT"`, `"actor":"system"`)
}

// preset returns a rules preset's settings as the catalogue serves them,
// with each of edits (old, new) applied to its JSON.
func (w *reviewWorld) preset(name string, edits ...string) map[string]any {
	w.t.Helper()
	st, b, _ := call(w.t, w.s, "GET", "/api/supervisor-engines/rules/presets", w.key, nil)
	var list struct {
		Presets []struct {
			Name     string
			Settings map[string]any
		}
	}
	if st != 200 || json.Unmarshal(b, &list) != nil {
		w.t.Fatalf("presets: %d %s", st, b)
	}
	for _, p := range list.Presets {
		if p.Name != name {
			continue
		}
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(p.Settings)
		doc := buf.String()
		for i := 0; i+1 < len(edits); i += 2 {
			if !strings.Contains(doc, edits[i]) {
				w.t.Fatalf("preset %s has no %q: %s", name, edits[i], doc)
			}
			doc = strings.ReplaceAll(doc, edits[i], edits[i+1])
		}
		var out map[string]any
		_ = json.Unmarshal([]byte(doc), &out)
		return out
	}
	w.t.Fatalf("no preset %s in %s", name, b)
	return nil
}

// TestApprovalGatePresetOnTheRealServer: the approval-gate preset, as the
// catalogue serves it (RestartWorkflow), parks a RESTART until an ADMIN
// approves it; then the restart happens and names its new run.
func TestApprovalGatePresetOnTheRealServer(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t)
	w.put("/api/sessions/ci", napSession("ci"))
	doc, _ := json.Marshal(map[string]any{"name": "Approval gate", "owns": []string{"session:ci"},
		"engine": map[string]any{"type": "rules", "settings": w.preset("approval-gate")}})
	w.put("/api/supervisors/gate", doc)
	id := w.napping("ci")
	st, b, _ := call(t, w.s, "POST", "/api/sessions/ci/executions/"+id+"/control", "", []byte(`{"action":"RESTART","wait":8}`))
	var ticket struct{ ReviewId, Status, Message string }
	if st != 202 || json.Unmarshal(b, &ticket) != nil || ticket.Status != "AWAITING_APPROVAL" || !strings.Contains(ticket.Message, "ADMIN") {
		t.Fatalf("RESTART under approval-gate with a wait: %d %s, want 202 AWAITING_APPROVAL", st, b)
	}
	var n int
	_ = w.db.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE session_id = 'ci'`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d runs before the approval, want the one", n)
	}
	st, b, _ = call(t, w.s, "POST", "/api/approvals/"+ticket.ReviewId, "", []byte(`{"decision":"APPROVE"}`))
	var rev struct {
		Status  string
		Outcome struct{ ResultExecutionIds []string }
	}
	if st != 200 || json.Unmarshal(b, &rev) != nil || rev.Status != "APPLIED" || len(rev.Outcome.ResultExecutionIds) != 1 {
		t.Fatalf("approve the RESTART: %d %s", st, b)
	}
	if s := w.status("ci", rev.Outcome.ResultExecutionIds[0]); s != "RUNNING" && s != "PENDING" {
		t.Fatalf("the restarted run is %s", s)
	}
}

// TestTooManyRunningPresetOnTheRealServer: the too-many-running preset
// (max 2 here) lets starts through while fewer than 2 runs are unfinished
// and denies the next with its reason; the denied start leaves no run.
func TestTooManyRunningPresetOnTheRealServer(t *testing.T) {
	t.Parallel()
	w := newReviewWorld(t)
	w.put("/api/sessions/ci", napSession("ci"))
	settings := w.preset("too-many-running", "workflow.activeCount >= 10", "workflow.activeCount >= 2",
		"10 runs of this workflow", "2 runs of this workflow")
	doc, _ := json.Marshal(map[string]any{"name": "Too many running", "owns": []string{"session:ci"},
		"engine": map[string]any{"type": "rules", "settings": settings}})
	w.put("/api/supervisors/limit", doc)
	start := func() (int, []byte) {
		st, b, _ := call(t, w.s, "POST", "/api/sessions/ci/workflows/nap/executions", "", []byte(`{"payload":{},"wait":5}`))
		return st, b
	}
	for i := range 2 {
		// The start is reviewed, allowed, and waits for its run (which naps
		// past the wait): 201 with the run's id once the review applied it.
		st, b := start()
		var out struct{ ExecutionId string }
		if st != 201 || json.Unmarshal(b, &out) != nil || out.ExecutionId == "" {
			t.Fatalf("start %d: %d %s, want 201 after the review allowed it", i+1, st, b)
		}
	}
	st, b := start()
	if st != 403 || !strings.Contains(string(b), "2 runs of this workflow are already unfinished") || !strings.Contains(string(b), "supervisor:limit") {
		t.Fatalf("third start: %d %s, want 403 from supervisor:limit", st, b)
	}
	var n int
	_ = w.db.QueryRow(context.Background(), `SELECT count(*) FROM executions WHERE session_id = 'ci'`).Scan(&n)
	if n != 2 {
		t.Fatalf("%d runs after a denied start, want 2", n)
	}
}
