package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// holdsWorld is a keyed server with the session ci and an agent supervisor
// "holder" that may Hold and Release runs of ci; its own requests are an
// ADMIN's.
type holdsWorld struct {
	*agentWorld
}

const holderDoc = `{"name":"Holder","owns":["session:ci"],"allowedCommands":["Hold","Release","PauseWorkflow","ResumeWorkflow"],
	"engine":{"type":"http","settings":{}}}`

func newHoldsWorld(t *testing.T) *holdsWorld {
	w := &holdsWorld{newAgentWorld(t, "YUKTA_API_KEYS="+writeKeyFile(t))}
	w.key = testKeys["admin"]
	w.put("/api/sessions/ci", napSession("ci"))
	w.createHolder()
	return w
}

// createHolder creates the supervisor "holder" and issues its credential.
func (w *holdsWorld) createHolder() {
	w.t.Helper()
	if st, b, _ := call(w.t, w.s, "PUT", "/api/supervisors/holder", w.key, []byte(holderDoc)); st != 201 {
		w.t.Fatalf("create holder: %d %s, want 201", st, b)
	}
	st, b, _ := call(w.t, w.s, "POST", "/api/supervisors/holder/credential", w.key, nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil || !strings.HasPrefix(c.Token, "yks_") {
		w.t.Fatalf("issue a credential: %d %s", st, b)
	}
	w.token = c.Token
}

// sub is w reporting to t (a subtest).
func (w *holdsWorld) sub(t *testing.T) *holdsWorld {
	return &holdsWorld{&agentWorld{reviewWorld: w.reviewWorld.in(t), token: w.token}}
}

// hold sends the holder's Hold of run id with key and wants it applied.
func (w *holdsWorld) hold(key, id string) map[string]any {
	w.t.Helper()
	st, b, _ := w.agent("POST", "/directives", fmt.Appendf(nil, `{"key":%q,"reason":"the holder looks at it","command":{"type":"Hold","target":"execution:%s"}}`, key, id))
	var res map[string]any
	if st != 202 || json.Unmarshal(b, &res) != nil {
		w.t.Fatalf("Hold %s: %d %s, want 202", id, st, b)
	}
	return res
}

// waitStatus polls the run until it has the status.
func (w *holdsWorld) waitStatus(id, want string) {
	w.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s := w.status("ci", id)
		if s == want {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("run %s is %s, want %s", id, s, want)
		}
	}
}

// released waits for the run's journal to hold a HoldReleased decision of
// the holder's hold with actor, channel and reason, and returns its body.
func (w *holdsWorld) released(id, actor, channel, reason string) map[string]any {
	w.t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, j, _ := call(w.t, w.s, "GET", "/api/sessions/ci/executions/"+id+"/journal", w.key, nil)
		last = string(j)
		sc := bufio.NewScanner(strings.NewReader(last))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec struct {
				Kind     string
				Decision map[string]any
			}
			if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Kind != "decision" || rec.Decision["type"] != "HoldReleased" {
				continue
			}
			d := rec.Decision
			data, _ := d["data"].(map[string]any)
			if r, _ := data["reason"].(string); d["actor"] == actor && d["channel"] == channel && data["supervisorId"] == "holder" && r == reason {
				return d
			}
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the journal of %s has no HoldReleased decision by %s over %s: %.4000s", id, actor, channel, last)
		}
	}
}

// holdsOf reads a run's hold ledger over REST.
func (w *holdsWorld) holdsOf(id string) []map[string]any {
	w.t.Helper()
	st, b, _ := call(w.t, w.s, "GET", "/api/sessions/ci/executions/"+id+"/holds", w.key, nil)
	var out struct {
		ExecutionId string
		Holds       []map[string]any
	}
	if st != 200 || json.Unmarshal(b, &out) != nil || out.ExecutionId != id {
		w.t.Fatalf("GET holds of %s: %d %s", id, st, b)
	}
	return out.Holds
}

// TestAHoldEndsWithItsHolder: deleting the supervisor that holds a run
// releases the hold in the same step (journaled with the deleting ADMIN)
// and resumes the run, and says so in its answer; an ADMIN releases any
// hold over REST, MCP and the CLI, each journaled with the ADMIN and its
// door, resuming the run when it was the last hold; a supervisor created
// again under the deleted id holds nothing, remembers none of the old
// directive keys and reads its signals from its own creation on.
func TestAHoldEndsWithItsHolder(t *testing.T) {
	t.Parallel()
	w := newHoldsWorld(t)
	admin := testKeys["admin"]

	// The holder holds run a: it pauses, and RESUME is refused.
	a := w.napping("ci")
	w.hold("hold-a", a)
	w.waitStatus(a, "PAUSED")
	resume := []byte(`{"action":"RESUME","reason":"go on"}`)
	if st, b, _ := call(t, w.s, "POST", "/api/sessions/ci/executions/"+a+"/control", admin, resume); st != 409 || !strings.Contains(string(b), `supervisor \"holder\"`) {
		t.Fatalf("RESUME of a held run: %d %s, want 409 naming the holder", st, b)
	}
	if hs := w.holdsOf(a); len(hs) != 1 || hs[0]["supervisorId"] != "holder" || hs[0]["reason"] != "the holder looks at it" || hs[0]["since"] == nil {
		t.Fatalf("the hold ledger of a: %v", hs)
	}

	// Deleting the holder releases its hold and resumes the run, and the
	// answer says so.
	st, b, _ := call(t, w.s, "DELETE", "/api/supervisors/holder", admin, nil)
	var del struct {
		SupervisorId  string
		ReleasedHolds []struct {
			ExecutionId, SessionId string
			Resumed                bool
		}
	}
	if st != 200 || json.Unmarshal(b, &del) != nil || del.SupervisorId != "holder" || len(del.ReleasedHolds) != 1 ||
		del.ReleasedHolds[0].ExecutionId != a || del.ReleasedHolds[0].SessionId != "ci" || !del.ReleasedHolds[0].Resumed {
		t.Fatalf("delete the holder: %d %s, want 200 naming run %s released and resumed", st, b, a)
	}
	w.waitStatus(a, "RUNNING")
	if hs := w.holdsOf(a); len(hs) != 0 {
		t.Fatalf("run a is still held after its holder was deleted: %v", hs)
	}
	w.released(a, "key:admin", "rest", "")
	var left int
	_ = w.db.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'holder')
		+ (SELECT count(*) FROM supervisor_cursors WHERE supervisor_id = 'holder')
		+ (SELECT count(*) FROM supervisor_holds WHERE supervisor_id = 'holder')`).Scan(&left)
	if left != 0 {
		t.Fatalf("%d ledger, cursor and hold rows of the deleted holder are left", left)
	}

	// Created again under the same id: it holds nothing, its old key
	// applies anew, and its signals start at its creation.
	w.createHolder()
	var snap struct{ Holds []any }
	if st, b, _ := w.agent("GET", "/snapshot", nil); st != 200 || json.Unmarshal(b, &snap) != nil || len(snap.Holds) != 0 {
		t.Fatalf("the new holder's snapshot: %d %s, want no holds", st, b)
	}
	st, b, _ = w.agent("GET", "/signals?wait=0", nil)
	if st != 200 {
		t.Fatalf("GET /signals: %d %s", st, b)
	}
	var page signalPage
	_ = json.Unmarshal(b, &page)
	for _, s := range page.Signals {
		if s.Signal["executionId"] == a && (s.Signal["type"] == "ExecutionStarted" || s.Signal["type"] == "HoldReleased") {
			t.Fatalf("the new holder reads a signal from before it existed: %v", s)
		}
	}
	again := w.hold("hold-a", a)
	if again["repeated"] == true {
		t.Fatalf("the old key hold-a was remembered by the new holder: %v", again)
	}
	w.waitStatus(a, "PAUSED")

	// An ADMIN releases holds through each door; the run resumes.
	t.Run("REST", func(t *testing.T) {
		if st, b, _ := call(t, w.s, "DELETE", "/api/sessions/ci/executions/"+a+"/holds/holder", testKeys["operator"], nil); st != 403 {
			t.Fatalf("an OPERATOR releases a hold: %d %s, want 403", st, b)
		}
		st, b, _ := call(t, w.s, "DELETE", "/api/sessions/ci/executions/"+a+"/holds/holder?reason=the+holder+is+stuck", admin, nil)
		var out struct {
			ExecutionId, SupervisorId string
			Resumed                   bool
			Holds                     []any
		}
		if st != 200 || json.Unmarshal(b, &out) != nil || out.ExecutionId != a || out.SupervisorId != "holder" || !out.Resumed || len(out.Holds) != 0 {
			t.Fatalf("release over REST: %d %s", st, b)
		}
		w.sub(t).waitStatus(a, "RUNNING")
		d := w.sub(t).released(a, "key:admin", "rest", "the holder is stuck")
		if c, _ := d["cause"].(map[string]any); d["decision"] != "hold_release" || c["holdReason"] != "the holder looks at it" {
			t.Fatalf("the journaled release: %v", d)
		}
		if st, b, _ := call(t, w.s, "DELETE", "/api/sessions/ci/executions/"+a+"/holds/holder", admin, nil); st != 409 || !strings.Contains(string(b), "does not hold") {
			t.Fatalf("release again: %d %s, want 409", st, b)
		}
	})
	t.Run("MCP", func(t *testing.T) {
		c := w.sub(t).napping("ci")
		w.sub(t).hold("hold-c", c)
		w.sub(t).waitStatus(c, "PAUSED")
		viewer := mustConnect(t, w.s.URL, testKeys["viewer"])
		tools, err := viewer.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if tl.Name == "release_hold" {
				t.Fatal("a VIEWER's tools/list shows release_hold")
			}
		}
		var list struct{ Holds []map[string]any }
		mustCall(t, viewer, "list_holds", map[string]any{"sessionId": "ci", "executionId": c}, &list)
		if len(list.Holds) != 1 || list.Holds[0]["supervisorId"] != "holder" {
			t.Fatalf("list_holds: %v", list)
		}
		var out struct {
			Resumed bool
			Next    string
		}
		mustCall(t, mustConnect(t, w.s.URL, admin), "release_hold",
			map[string]any{"sessionId": "ci", "executionId": c, "supervisorId": "holder", "reason": "over MCP"}, &out)
		if !out.Resumed {
			t.Fatalf("release_hold: %+v", out)
		}
		w.sub(t).waitStatus(c, "RUNNING")
		w.sub(t).released(c, "key:admin", "mcp", "over MCP")
	})
	t.Run("CLI", func(t *testing.T) {
		d := w.sub(t).napping("ci")
		w.sub(t).hold("hold-d", d)
		w.sub(t).waitStatus(d, "PAUSED")
		if out := yuktaAs(t, w.s.URL, admin, "holds", "list", "ci", d); out.code != 0 || !strings.Contains(out.stdout, "holder") {
			t.Fatalf("yukta holds list:\n%s", out)
		}
		out := yuktaAs(t, w.s.URL, admin, "holds", "release", "ci", d, "holder", "--reason", "over the CLI")
		if out.code != 0 || cliField(t, out, "action") != "released" || cliField(t, out, "resumed") != "true" {
			t.Fatalf("yukta holds release:\n%s", out)
		}
		w.sub(t).waitStatus(d, "RUNNING")
		w.sub(t).released(d, "key:admin", "cli (claimed)", "over the CLI")
	})
}

// TestHoldsGuideExample runs the example of docs/supervisors.md ("Reading
// and ending holds as an ADMIN") as written, with curl, against a run
// the supervisor "guard" holds: the ledger shows the hold, the release
// resumes the run.
func TestHoldsGuideExample(t *testing.T) {
	t.Parallel()
	w := newHoldsWorld(t)
	if st, b, _ := call(t, w.s, "PUT", "/api/supervisors/guard", w.key, []byte(holderDoc)); st != 201 {
		t.Fatalf("create guard: %d %s", st, b)
	}
	st, b, _ := call(t, w.s, "POST", "/api/supervisors/guard/credential", w.key, nil)
	var c struct{ Token string }
	if st != 201 || json.Unmarshal(b, &c) != nil {
		t.Fatalf("issue guard's credential: %d %s", st, b)
	}
	g := &holdsWorld{&agentWorld{reviewWorld: w.reviewWorld.in(t), token: c.Token}}
	run := g.napping("ci")
	g.hold("hold-guide", run)
	g.waitStatus(run, "PAUSED")

	block := testedBlocks(t, "docs/supervisors.md", "TestHoldsGuideExample", 1)[0].Body
	if !strings.Contains(block, "holds/guard") {
		t.Fatalf("docs/supervisors.md: the block marked tested-by TestHoldsGuideExample does not end guard's hold:\n%s", block)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(block, "http://127.0.0.1:8080", w.s.URL))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "RUN=" + run, "VIEWER_KEY=" + testKeys["viewer"], "YUKTA_API_KEY=" + testKeys["admin"]}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, out)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var ledger struct {
		PausedByHold bool `json:"pausedByHold"`
		Holds        []struct {
			SupervisorID string `json:"supervisorId"`
		}
	}
	var release struct {
		SupervisorID string `json:"supervisorId"`
		Resumed      bool
		Holds        []any
	}
	if dec.Decode(&ledger) != nil || !ledger.PausedByHold || len(ledger.Holds) != 1 || ledger.Holds[0].SupervisorID != "guard" ||
		dec.Decode(&release) != nil || release.SupervisorID != "guard" || !release.Resumed || len(release.Holds) != 0 {
		t.Fatalf("the example's answers, want the guard's hold and then its release with the run resumed:\n%s", out)
	}
	g.waitStatus(run, "RUNNING")
}
