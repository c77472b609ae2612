package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// The seed's example supervisor: pause the workflow after three node
// FAILUREs within 60 seconds (docs/supervisors.md).
const seedGuard = `{
  "name": "Failure guard",
  "engine": {"type": "rules", "settings": {"schemaVersion": 1, "rules": [
    {"id": "pause-on-repeated-failure",
     "when": {"event": "NodeStatusChanged", "status": "FAILURE", "count": 3, "withinSeconds": 60},
     "then": {"command": "PauseWorkflow"}}]}},
  "owns": ["session:ci"],
  "parentId": "ops"
}`

// opsAgent is an http supervisor of the whole server with a secret header.
const opsAgent = `{"name": "Ops agent", "engine": {"type": "http", "settings": {"url": "https://agent.example.com/yukta/signals",
  "timeoutMs": 2500, "secretHeaders": {"Authorization": "Bearer e2e-supervisor-s3cret"}}}, "owns": ["server"]}`

// TestSupervisorStore drives the supervisor store through the real binary:
// REST, MCP and the CLI read the same documents, with secrets masked;
// invalid documents and parent cycles are refused with every problem and
// change nothing; a parent cannot be deleted before its children.
func TestSupervisorStore(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_API_KEYS=" + writeKeyFile(t)}})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	admin, viewer := testKeys["admin"], testKeys["viewer"]
	rows := func() map[string]int64 {
		out := map[string]int64{}
		for _, tbl := range []string{"supervisors", "events"} {
			var n int64
			if err := db.QueryRow(context.Background(), "SELECT count(*) FROM "+tbl).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out[tbl] = n
		}
		return out
	}

	// Apply: the parent first, then the seed's rule supervisor under it.
	status, b, _ := call(t, s, "PUT", "/api/supervisors/ops", admin, []byte(opsAgent))
	if status != 201 || strings.Contains(string(b), "e2e-supervisor-s3cret") || !strings.Contains(string(b), `"Authorization":"***"`) {
		t.Fatalf("PUT ops: %d %s", status, b)
	}
	status, b, _ = call(t, s, "PUT", "/api/supervisors/guard", admin, []byte(seedGuard))
	var guard struct {
		Engine          struct{ Type string }
		AllowedCommands []string
		Reviews         []string
		Enabled         bool
	}
	_ = json.Unmarshal(b, &guard)
	if status != 201 || len(guard.AllowedCommands) != 21 || guard.Reviews == nil || !guard.Enabled || guard.Engine.Type != "rules" ||
		!strings.Contains(string(b), `"withinSeconds":60`) || !strings.Contains(string(b), `"parentId":"ops"`) {
		t.Fatalf("PUT guard: %d %s, want 201 with every default explicit", status, b)
	}
	if status, b, _ = call(t, s, "PUT", "/api/supervisors/guard", viewer, []byte(seedGuard)); status != 403 || !strings.Contains(string(b), "ADMIN") {
		t.Fatalf("PUT as a VIEWER: %d %s, want 403", status, b)
	}

	// Read back over REST: the document as stored, secrets masked.
	status, b, _ = call(t, s, "GET", "/api/supervisors/guard", viewer, nil)
	if status != 200 || !strings.Contains(string(b), `"pause-on-repeated-failure"`) || !strings.Contains(string(b), `"count":3`) {
		t.Fatalf("GET guard: %d %s", status, b)
	}
	status, b, _ = call(t, s, "GET", "/api/supervisors/ops", viewer, nil)
	if status != 200 || strings.Contains(string(b), "e2e-supervisor-s3cret") || !strings.Contains(string(b), `"Authorization":"***"`) ||
		!strings.Contains(string(b), `"timeoutMs":2500`) {
		t.Fatalf("GET ops: %d %s, want the secret masked", status, b)
	}
	// Sending back what was read keeps the stored secret.
	if status, b2, _ := call(t, s, "PUT", "/api/supervisors/ops", admin, b); status != 200 {
		t.Fatalf("PUT ops as read: %d %s", status, b2)
	}
	var stored string
	if err := db.QueryRow(context.Background(), `SELECT spec->'engine'->'settings'->'secretHeaders'->>'Authorization' FROM supervisors WHERE id = 'ops'`).Scan(&stored); err != nil ||
		stored != "Bearer e2e-supervisor-s3cret" {
		t.Fatalf("stored secret after sending *** back: %q %v", stored, err)
	}
	status, b, _ = call(t, s, "GET", "/api/supervisors", viewer, nil)
	var list struct {
		Supervisors []struct{ ID, UpdatedBy, UpdatedVia string }
	}
	_ = json.Unmarshal(b, &list)
	if status != 200 || len(list.Supervisors) != 2 || list.Supervisors[0].ID != "guard" || list.Supervisors[1].UpdatedBy != "key:admin" ||
		list.Supervisors[1].UpdatedVia != "rest" {
		t.Fatalf("GET /api/supervisors: %d %s", status, b)
	}

	// ... and over MCP.
	cs := mustConnect(t, s.URL, viewer)
	var sups mcpserver.SupervisorList
	mustCall(t, cs, "list_supervisors", nil, &sups)
	if len(sups.Supervisors) != 2 || sups.Supervisors[0].ID != "guard" || sups.Supervisors[0].ParentID != "ops" {
		t.Fatalf("list_supervisors: %+v", sups)
	}
	res := mcpCall(t, cs, "get_supervisor", map[string]any{"supervisorId": "ops"}, nil)
	if res.IsError || strings.Contains(text(res), "e2e-supervisor-s3cret") || !strings.Contains(text(res), `"***"`) {
		t.Fatalf("get_supervisor ops: %s", text(res))
	}
	var det mcpserver.SupervisorDetails
	mustCall(t, cs, "get_supervisor", map[string]any{"supervisorId": "guard"}, &det)
	if det.Engine != "rules" || det.Settings["rules"] == nil || det.UpdatedBy != "key:admin" {
		t.Fatalf("get_supervisor guard: %+v", det)
	}
	adminMCP := mustConnect(t, s.URL, admin)
	if res := mcpCall(t, adminMCP, "revoke_credential", map[string]any{"supervisorId": "guard"}, nil); !res.IsError ||
		text(res) != "Supervisor guard has no credential. Nothing was changed; an ADMIN issues one with create_credential." {
		t.Fatalf("revoke_credential without a credential: %s", text(res))
	}

	// An invalid document: every problem at once, nothing stored.
	before := rows()
	bad := `{"name": "", "engine": {"type": "rules", "settings": {"rules": [
	  {"id": "r1", "when": {"event": "NodeStatusChanged", "status": "EXPLODED", "count": 0, "withinSeconds": 60, "if": "event.nodeId =="},
	   "then": {"command": "PauseWorkflw"}}]}}, "owns": ["session:ci", "nowhere"], "colour": "red"}`
	status, b, _ = call(t, s, "PUT", "/api/supervisors/broken", admin, []byte(bad))
	var p struct {
		Title  string
		Errors []struct{ Path, Message string }
	}
	_ = json.Unmarshal(b, &p)
	paths := map[string]bool{}
	for _, e := range p.Errors {
		paths[e.Path] = true
	}
	for _, want := range []string{"name", "colour", "owns[1]", "engine.settings.rules[0].when.status", "engine.settings.rules[0].when.count",
		"engine.settings.rules[0].when.if", "engine.settings.rules[0].then.command"} {
		if !paths[want] {
			t.Errorf("invalid document: no problem at %s in %s", want, b)
		}
	}
	if status != 400 || p.Title != "Invalid supervisor" {
		t.Fatalf("invalid document: %d %s", status, b)
	}
	if after := rows(); after["supervisors"] != before["supervisors"] || after["events"] != before["events"] {
		t.Fatalf("the invalid document changed rows: %v -> %v", before, after)
	}

	// A parent cycle: ops under guard, whose parent is ops.
	cycle := strings.Replace(opsAgent, `"owns": ["server"]`, `"owns": ["server"], "parentId": "guard"`, 1)
	status, b, _ = call(t, s, "PUT", "/api/supervisors/ops", admin, []byte(cycle))
	p.Errors = nil
	_ = json.Unmarshal(b, &p)
	if status != 400 || len(p.Errors) != 1 || p.Errors[0].Path != "parentId" || !strings.Contains(p.Errors[0].Message, "the chain ops -> guard -> ops is a cycle") {
		t.Fatalf("parent cycle: %d %s", status, b)
	}
	if after := rows(); after["supervisors"] != before["supervisors"] || after["events"] != before["events"] {
		t.Fatalf("the refused cycle changed rows: %v -> %v", before, after)
	}

	// Delete: the parent is refused while guard names it.
	status, b, _ = call(t, s, "DELETE", "/api/supervisors/ops", admin, nil)
	if status != 409 || !strings.Contains(string(b), `supervisor \"ops\" is the parent of supervisor \"guard\"`) {
		t.Fatalf("DELETE ops: %d %s, want 409 naming guard", status, b)
	}
	for _, id := range []string{"guard", "ops"} {
		if status, b, _ := call(t, s, "DELETE", "/api/supervisors/"+id, admin, nil); status != 200 {
			t.Fatalf("DELETE %s: %d %s", id, status, b)
		}
	}
	if status, b, _ := call(t, s, "GET", "/api/supervisors/guard", viewer, nil); status != 404 {
		t.Fatalf("GET after delete: %d %s", status, b)
	}
	var applied, deleted int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE type = 'SupervisorApplied'), count(*) FILTER (WHERE type = 'SupervisorDeleted')
		FROM events WHERE actor = 'key:admin' AND channel = 'rest' AND session_id = ''`).Scan(&applied, &deleted); err != nil || applied != 3 || deleted != 2 {
		t.Fatalf("supervisor events: %d applied, %d deleted, %v; want 3 and 2", applied, deleted, err)
	}

	// The CLI: apply, list, show (masked) and delete.
	dir := t.TempDir()
	opsFile, guardFile := filepath.Join(dir, "ops.json"), filepath.Join(dir, "guard.json")
	if err := os.WriteFile(opsFile, []byte(strings.Replace(opsAgent, `{"name"`, `{"id": "ops", "name"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(guardFile, []byte(seedGuard), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) cliOut {
		t.Helper()
		cmd := cliCmd(t, t.Context(), s.URL, args...)
		cmd.Env = append(cmd.Env, "YUKTA_API_KEY="+admin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		out := cliOut{stdout: stdout.String(), stderr: stderr.String()}
		if ee, ok := err.(interface{ ExitCode() int }); ok {
			out.code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("yukta %v: %v", args, err)
		}
		return out
	}
	cliWant(t, cli("supervisors", "apply", opsFile), 0, "supervisor: ops\n", "action: created\n", "engine: http\n", "owns: server\n")
	// The seed document names no id: the CLI asks for one.
	if out := cli("supervisors", "apply", guardFile); out.code != 2 || !strings.Contains(out.stderr, `has no "id"; add one or pass --id SUPERVISOR`) {
		t.Fatalf("apply without an id\n%s", out)
	}
	cliWant(t, cli("supervisors", "apply", guardFile, "--id", "guard"), 0, "supervisor: guard\n", "parent: ops\n")
	out := cli("supervisors", "list")
	cliWant(t, out, 0, "SUPERVISOR", "guard", "ops")
	out = cli("supervisors", "show", "ops")
	cliWant(t, out, 0, `"Authorization": "***"`, `"timeoutMs": 2500`)
	if strings.Contains(out.stdout, "e2e-supervisor-s3cret") {
		t.Fatalf("show printed the secret\n%s", out)
	}
	out = cli("supervisors", "delete", "ops")
	if out.code != 1 || !strings.Contains(out.stderr, "409") || !strings.Contains(out.stderr, `"guard"`) {
		t.Fatalf("delete a parent with the CLI\n%s", out)
	}
	cliWant(t, cli("supervisors", "delete", "guard"), 0, "action: deleted\n")
	cliWant(t, cli("supervisors", "delete", "ops"), 0, "action: deleted\n")
	var via string
	if err := db.QueryRow(context.Background(), `SELECT channel FROM events WHERE type = 'SupervisorDeleted' ORDER BY seq DESC LIMIT 1`).Scan(&via); err != nil || via != "cli (claimed)" {
		t.Fatalf("the CLI's delete was recorded over %q, %v; want cli (claimed)", via, err)
	}
}
