package cli

import (
	"net/http"
	"strings"
	"testing"
)

// TestHoldCommands: holds list prints the ledger (or says nothing holds the
// run); holds release sends DELETE with the reason and the cli channel and
// prints the outcome; a 409 exits 1 with the server's sentence.
func TestHoldCommands(t *testing.T) {
	const eid = "01a2339a-b316-7d17-a312-1c0df7b86048"
	held := true
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && held:
			writeJSON(w, 200, map[string]any{"executionId": eid, "pausedByHold": true,
				"holds": []map[string]any{{"supervisorId": "guard", "since": "2026-03-01T12:00:00Z", "reason": "vendor\x1b[2J outage"}}})
		case r.Method == http.MethodGet:
			writeJSON(w, 200, map[string]any{"executionId": eid, "pausedByHold": false, "holds": []any{}})
		case r.URL.Path == "/api/sessions/ci/executions/"+eid+"/holds/nobody":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(409)
			_, _ = w.Write([]byte(`{"type":"about:blank","title":"Conflict","status":409,"detail":"supervisor \"nobody\" does not hold execution ` + eid + ` (it is held by supervisor \"guard\"); nothing to release"}`))
		default:
			held = false
			writeJSON(w, 200, map[string]any{"sessionId": "ci", "executionId": eid, "supervisorId": "guard", "heldSince": "2026-03-01T12:00:00Z",
				"holdReason": "vendor outage", "resumed": true, "commandId": "c1", "message": "released; the run resumes", "holds": []any{}})
		}
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}

	out, _, code := run(t, env, "holds", "list", "ci", eid)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "SUPERVISOR") || !strings.HasPrefix(lines[1], "guard") || strings.Contains(out, "\x1b") {
		t.Fatalf("holds list: exit %d\n%q", code, out)
	}
	out, errOut, code := run(t, env, "holds", "release", "ci", eid, "nobody")
	if code != 1 || !strings.Contains(errOut, `does not hold execution`) || out != "" {
		t.Fatalf("release a hold that is not there: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = run(t, env, "holds", "release", "ci", eid, "guard", "--reason", "vendor is back")
	if code != 0 || !strings.Contains(out, "action: released\n") || !strings.Contains(out, "resumed: true\n") {
		t.Fatalf("holds release: exit %d\n%s", code, out)
	}
	r := f.requests()[len(f.requests())-1]
	if r.Method != http.MethodDelete || r.URL.Path != "/api/sessions/ci/executions/"+eid+"/holds/guard" ||
		r.URL.Query().Get("reason") != "vendor is back" || r.Header.Get("Yukta-Channel") != "cli" {
		t.Fatalf("release sent %s %s?%s %v", r.Method, r.URL.Path, r.URL.RawQuery, r.Header)
	}
	if out, _, code := run(t, env, "holds", "list", "ci", eid); code != 0 || !strings.Contains(out, "no supervisor holds execution") {
		t.Fatalf("holds list of a free run: exit %d %q", code, out)
	}
	if _, errOut, code := run(t, env, "holds", "release", "ci", eid); code != 2 || errOut == "" {
		t.Fatalf("release without a supervisor: exit %d %q, want a usage error", code, errOut)
	}
}
