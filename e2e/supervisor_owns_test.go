package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// TestSupervisorOwnsMissingSession: owning a session that does not exist
// is accepted (it may be created later) but said: in the apply's answer
// (REST and the CLI) and on every read (REST GET, MCP get_supervisor, the
// agent's GET /self, yukta supervisors show), until the session exists. A document read with its
// warnings applies back as it is. Before, the apply answered 201 with no
// word and GET showed nothing.
func TestSupervisorOwnsMissingSession(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	guard := write("guard.json", `{"id": "guard", "name": "Failure guard",
  "engine": {"type": "rules", "settings": {"schemaVersion": 1, "rules": [
    {"id": "pause-on-repeated-failure",
     "when": {"event": "NodeStatusChanged", "status": "FAILURE", "count": 3, "withinSeconds": 60},
     "then": {"command": "PauseWorkflow"}}]}},
  "owns": ["session:ci"]}`)
	const missing = `owns "session:ci", but session "ci" does not exist`
	out := yukta(t, srv.URL, "supervisors", "apply", guard)
	cliWant(t, out, 0, "supervisor: guard", "action: created", "warning: "+missing+"; the supervisor acts on it once it is created (yukta apply FILE --id ci)")
	if strings.Contains(out.stdout, "/api/") {
		t.Errorf("the CLI's warning names a REST route, not a yukta command\n%s", out)
	}

	get := func() (warnings []string, body []byte) {
		t.Helper()
		res, b := srv.do(t, "GET", "/api/supervisors/guard", "", nil)
		if res.StatusCode != 200 {
			t.Fatalf("GET: %d %s", res.StatusCode, b)
		}
		var doc struct{ Warnings []string }
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Warnings, b
	}
	ws, body := get()
	if len(ws) != 1 || !strings.Contains(ws[0], missing) || !strings.Contains(ws[0], "PUT /api/sessions/ci") {
		t.Fatalf("GET warnings: %q, want the missing session, with the route that creates it", ws)
	}
	// Applied back as read, warnings and all.
	if res, b := srv.do(t, "PUT", "/api/supervisors/guard", "application/json", body); res.StatusCode != 200 || !strings.Contains(string(b), `session \"ci\" does not exist`) {
		t.Fatalf("PUT of the document as read: %d %s, want 200 with the warning again", res.StatusCode, b)
	}
	var details struct{ Warnings []string }
	mustCall(t, mustConnect(t, srv.URL, ""), "get_supervisor", map[string]any{"supervisorId": "guard"}, &details)
	if len(details.Warnings) != 1 || !strings.Contains(details.Warnings[0], missing) {
		t.Fatalf("MCP get_supervisor warnings: %q", details.Warnings)
	}
	// The agent reads it of itself too.
	st, b, _ := call(t, srv, "POST", "/api/supervisors/guard/credential", "", nil)
	var cred struct{ Token string }
	if st != 201 || json.Unmarshal(b, &cred) != nil {
		t.Fatalf("credential: %d %s", st, b)
	}
	st, b, _ = call(t, srv, "GET", "/api/agent/v1/self", cred.Token, nil)
	var self struct{ Warnings []string }
	if st != 200 || json.Unmarshal(b, &self) != nil || len(self.Warnings) != 1 || !strings.Contains(self.Warnings[0], missing) {
		t.Fatalf("agent GET /self: %d %s, want the warning", st, b)
	}
	out = yukta(t, srv.URL, "supervisors", "show", "guard")
	if out.code != 0 || !strings.Contains(out.stderr, "warning: "+missing) || strings.Contains(out.stdout, "warning") {
		t.Fatalf("supervisors show: want the document on stdout and the warnings on stderr\n%s", out)
	}

	// The session with its workflow: the warnings go.
	ci := write("ci.json", `{"sessionId": "ci", "name": "CI", "workflows": [{"workflowId": "nap", "nodes": [{"nodeId": "t", "type": "MANUAL"}]}]}`)
	cliWant(t, yukta(t, srv.URL, "apply", ci), 0, "session: ci")
	if ws, b := get(); len(ws) != 0 || strings.Contains(string(b), "warnings") {
		t.Fatalf("GET after the session exists: %s, want no warnings", b)
	}
	out = yukta(t, srv.URL, "supervisors", "apply", guard)
	cliWant(t, out, 0, "action: replaced")
	if strings.Contains(out.stdout, "warning") {
		t.Fatalf("apply after the session exists still warns\n%s", out)
	}
	// A workflow the session does not have.
	other := write("other.json", strings.Replace(strings.Replace(readFile(t, guard), `"guard"`, `"other"`, 1), `"session:ci"`, `"workflow:ci/gone"`, 1))
	cliWant(t, yukta(t, srv.URL, "supervisors", "apply", other), 0, `warning: owns "workflow:ci/gone", but session "ci" has no workflow "gone"`)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
