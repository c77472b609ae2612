package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// TestApplyReportsEveryProblem: one `yukta apply` of a document with six
// problems lists all six, each at its JSON path, whichever check finds it
// (before: the URL's bad session id hid the other five, and the credential
// in a plain header surfaced only once no config field failed); a document
// broken after its id gets the server's located answer (byte offset and
// path), and the hints name yukta commands, not REST routes.
func TestApplyReportsEveryProblem(t *testing.T) {
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
	bad := write("bad.json", `{"sessionId": "Bad Id", "name": "",
 "workflows": [{"workflowId": "w1", "nodes": [
   {"nodeId": "t", "type": "MANUAL"},
   {"nodeId": "h", "type": "HTTP_REQUEST", "config": {"url": "https://example.com", "headers": {"X-Api-Key": "abc"}, "timeoutMs": 5}},
   {"nodeId": "z", "type": "NOPE"}
 ], "edges": [{"source": "t", "target": "h"}, {"source": "t", "target": "missing"}]}]}`)
	out := yukta(t, srv.URL, "apply", bad)
	if out.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", out.code, out)
	}
	for _, want := range []string{
		"6 problems found",
		`sessionId: session id "Bad Id" must match`,
		"name: must not be empty",
		"workflows[0].nodes[1].config.timeoutMs: ",
		"workflows[0].nodes[1].config.headers.X-Api-Key: ",
		`workflows[0].nodes[2].type: node "z": unknown plugin type "NOPE"; call yukta plugins list`,
		"workflows[0].edges[1].target: ",
	} {
		if !strings.Contains(out.stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out.stderr, "/api/") {
		t.Errorf("stderr names a REST route; the CLI's hints name yukta commands\n%s", out)
	}

	// A repeated key is one problem among the rest, not the only answer.
	dup := write("dup.json", `{"sessionId": "ci", "name": "a", "name": "b", "workflows": [{"workflowId": "w", "nodes": [{"nodeId": "t", "type": "NOPE"}]}]}`)
	out = yukta(t, srv.URL, "apply", dup)
	for _, want := range []string{"2 problems found", "name: appears twice in one object", `workflows[0].nodes[0].type: node "t": unknown plugin type "NOPE"`} {
		if out.code != 1 || !strings.Contains(out.stderr, want) {
			t.Errorf("repeated key: want exit 1 and %q on stderr\n%s", want, out)
		}
	}

	broken := write("broken.json", `{"sessionId": "ci", "name": "x", "workflows": [{"workflowId": "w", "nodes": [{"nodeId": "t", "type": "MANUAL",}]}]}`)
	out = yukta(t, srv.URL, "apply", broken)
	for _, want := range []string{"is not valid JSON at byte 110", "(in workflows[0].nodes[0])"} {
		if out.code != 1 || !strings.Contains(out.stderr, want) {
			t.Errorf("broken document: want exit 1 and %q on stderr\n%s", want, out)
		}
	}
	if strings.Contains(out.stderr, "invalid character") {
		t.Errorf("broken document: stderr has the local parser's Go text, not the server's located error\n%s", out)
	}
}
