package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// mcpRaw posts one JSON-RPC request to /mcp with key and returns the HTTP
// status and body, so a refusal at the door is seen as the HTTP answer.
func mcpRaw(t *testing.T, s *server, key, body string) (int, []byte) {
	t.Helper()
	status, b, _ := call(t, s, "POST", "/mcp", key, []byte(body), "Accept", "application/json, text/event-stream")
	return status, b
}

// workerRefused checks that key, a WORKER key, is refused with 403 on the
// REST routes, the event stream and the MCP door, each refusal naming the
// role and what a WORKER key may do, and that nothing changed.
func workerRefused(t *testing.T, e *accessEnv, who, key string) {
	t.Helper()
	before := e.counts()
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/api/sessions", ""},
		{"GET", "/api/sessions/alpha", ""},
		{"POST", "/api/sessions/alpha/workflows/wf/executions", `{"payload":{"n":3}}`},
		{"POST", "/api/sessions/alpha/workflows/wf/pause", `{}`},
		{"GET", "/api/sessions/alpha/executions", ""},
		// A route whose handler authorizes (the input's session is known
		// once it is loaded): refused at the gate all the same.
		{"POST", "/api/inputs/0193b7a0-0000-7000-8000-000000000001", `{"answer":"x"}`},
		{"GET", "/api/events", ""},
		{"GET", "/api/keys", ""},
		{"GET", "/api/plugins", ""},
	} {
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		status, b, h := call(t, e.s, r.method, r.path, key, body)
		if status != 403 || !strings.Contains(string(b), "key:"+who) || !strings.Contains(string(b), "WORKER") ||
			!strings.Contains(string(b), "tasks of worker queues") {
			t.Errorf("%s %s as the WORKER key %s: %d %s; want 403 naming the key, the role WORKER and what it may do", r.method, r.path, who, status, b)
		}
		checkAnswer(t, r.method, r.path, status, h, b)
	}
	for _, rpc := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"w","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"start_workflow","arguments":{"sessionId":"alpha","workflowId":"wf"}}}`,
	} {
		status, b := mcpRaw(t, e.s, key, rpc)
		if status != 403 || !strings.Contains(string(b), "WORKER") || !strings.Contains(string(b), "MCP") {
			t.Errorf("MCP %s as the WORKER key %s: %d %s; want 403 naming the role and the door", rpc, who, status, b)
		}
	}
	e.assertUnchanged("requests of the WORKER key "+who, before)
}

// TestWorkerRole is issue 23's key role WORKER through the real binary: a
// WORKER key, from the key file (with a queue list) and stored (over REST,
// MCP and the CLI), is refused on the REST routes, the event stream and
// every MCP method with a 403 that names the role and what it may do; an
// OPERATOR key still reads and starts runs; the keys API shows the queue
// lists; a queue list on any other role, or a bad queue name, is a 400
// naming queues that stores nothing.
func TestWorkerRole(t *testing.T) {
	t.Parallel()
	e := newAccessEnv(t)
	admin := testKeys["admin"]

	// The key file's WORKER keys, with and without a queue list.
	workerRefused(t, e, "worker", testKeys["worker"])
	workerRefused(t, e, "worker-q", testKeys["worker-q"])

	// A stored WORKER key, limited to a queue and a session.
	status, body, _ := call(t, e.s, "POST", "/api/keys", admin, []byte(`{"name":"runner","role":"WORKER","queues":["gpu","build"],"sessions":["alpha"]}`))
	var created storedKey
	if status != 201 || json.Unmarshal(body, &created) != nil {
		t.Fatalf("create a WORKER key: %d %s", status, body)
	}
	if created.Role != "WORKER" || !slices.Equal(created.Queues, []string{"build", "gpu"}) || !slices.Equal(created.Sessions, []string{"alpha"}) {
		t.Fatalf("create answer: %s; want role WORKER, queues [build gpu], sessions [alpha]", body)
	}
	untilStatus(t, "the stored WORKER key refused", waitLimit, 403, func(s *server) int { return keyStatus(t, s, created.Secret, "runner") }, e.s)
	workerRefused(t, e, "runner", created.Secret)

	// The keys API shows the queue lists: the file's and the stored key's.
	status, body, _ = call(t, e.s, "GET", "/api/keys", admin, nil)
	var list struct{ Items []storedKey }
	if status != 200 || json.Unmarshal(body, &list) != nil {
		t.Fatalf("list: %d %s", status, body)
	}
	queues := map[string][]string{}
	for _, k := range list.Items {
		queues[k.Name] = k.Queues
	}
	if !slices.Equal(queues["worker-q"], []string{"build", "deploy"}) || queues["worker"] != nil || !slices.Equal(queues["runner"], []string{"build", "gpu"}) || queues["admin"] != nil {
		t.Fatalf("list queues %v: %s", queues, body)
	}
	status, body, _ = call(t, e.s, "GET", "/api/keys/runner", admin, nil)
	var got storedKey
	if status != 200 || json.Unmarshal(body, &got) != nil || !slices.Equal(got.Queues, []string{"build", "gpu"}) {
		t.Fatalf("get runner: %d %s", status, body)
	}

	// Over MCP and the CLI too.
	cs := mustConnect(t, e.s.URL, admin)
	var viaMCP storedKey
	mustCall(t, cs, "create_api_key", map[string]any{"name": "mcp-runner", "role": "WORKER", "queues": []string{"etl"}}, &viaMCP)
	if viaMCP.Role != "WORKER" || !slices.Equal(viaMCP.Queues, []string{"etl"}) {
		t.Fatalf("create_api_key: %+v", viaMCP)
	}
	var listed struct{ Keys []storedKey }
	mustCall(t, cs, "list_api_keys", map[string]any{}, &listed)
	found := false
	for _, k := range listed.Keys {
		if k.Name == "mcp-runner" && slices.Equal(k.Queues, []string{"etl"}) {
			found = true
		}
	}
	if !found {
		t.Fatalf("list_api_keys lacks mcp-runner with queues [etl]: %+v", listed.Keys)
	}
	out := yuktaAs(t, e.s.URL, admin, "keys", "create", "cli-runner", "--role", "WORKER", "--queues", "etl,gpu", "-o", "json")
	cliWant(t, out, 0, `"secret"`)
	var viaCLI storedKey
	if err := json.Unmarshal([]byte(out.stdout), &viaCLI); err != nil || !slices.Equal(viaCLI.Queues, []string{"etl", "gpu"}) {
		t.Fatalf("keys create --queues: %v\n%s", err, out)
	}
	out = yuktaAs(t, e.s.URL, admin, "keys", "list")
	cliWant(t, out, 0, "cli-runner", "WORKER", "etl,gpu")

	// An OPERATOR key still reads and starts runs.
	if status, body, _ := call(t, e.s, "GET", "/api/sessions", testKeys["operator"], nil); status != 200 {
		t.Fatalf("GET /api/sessions as OPERATOR: %d %s", status, body)
	}
	if status, body, _ := call(t, e.s, "POST", "/api/sessions/alpha/workflows/wf/executions", testKeys["operator"], []byte(`{"payload":{"n":4}}`)); status/100 != 2 {
		t.Fatalf("start as OPERATOR: %d %s", status, body)
	}
	e.settle()
	ocs := mustConnect(t, e.s.URL, testKeys["operator"])
	mustCall(t, ocs, "list_sessions", map[string]any{}, nil)

	// Bad input: a queue list on another role, a bad queue name: 400
	// naming queues, nothing stored.
	var before int
	if err := e.db.QueryRow(t.Context(), `SELECT count(*) FROM api_keys`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body string
		want []string
	}{
		{`{"name":"v","role":"VIEWER","queues":["build"]}`, []string{`"queues"`, "WORKER"}},
		{`{"name":"o","role":"OPERATOR","queues":["build"]}`, []string{`"queues"`, "WORKER"}},
		{`{"name":"a","role":"ADMIN","queues":["build"]}`, []string{`"queues"`, "WORKER"}},
		{`{"name":"w","role":"WORKER","queues":["Bad Queue"]}`, []string{`"queues"`, "Bad Queue"}},
		{`{"name":"w","role":"WORKER","queues":["a","a"]}`, []string{`"queues"`, "twice"}},
		{`{"name":"w","role":"WORKER","queues":[]}`, []string{`"queues"`}},
	} {
		status, body, _ := call(t, e.s, "POST", "/api/keys", admin, []byte(c.body))
		if status != 400 || !strings.Contains(string(body), "urn:yukta:problem") {
			t.Errorf("POST %s: %d %s, want 400", c.body, status, body)
		}
		for _, w := range c.want {
			if !strings.Contains(string(body), w) {
				t.Errorf("POST %s: %s lacks %s", c.body, body, w)
			}
		}
	}
	res := mcpCall(t, cs, "create_api_key", map[string]any{"name": "v", "role": "VIEWER", "queues": []string{"build"}}, nil)
	if !res.IsError || !strings.Contains(text(res), "queues") {
		t.Errorf("create_api_key VIEWER with queues: %s", text(res))
	}
	out = yuktaAs(t, e.s.URL, admin, "keys", "create", "v", "--role", "VIEWER", "--queues", "build")
	if out.code == 0 || !strings.Contains(out.stderr, "queues") {
		t.Errorf("keys create VIEWER --queues: %s", out)
	}
	var after int
	if err := e.db.QueryRow(t.Context(), `SELECT count(*) FROM api_keys`).Scan(&after); err != nil || after != before {
		t.Fatalf("refused creates changed the keys: %d rows, then %d (%v)", before, after, err)
	}
}

// TestWorkerKeyCannotCloseAnOpenServer: on an open server (no key), the
// first stored key closes REST and MCP; a WORKER key may use neither, so
// it cannot be that key: 409 naming the role and the next step, nothing
// stored, the server still open. After an ADMIN key it is created.
func TestWorkerKeyCannotCloseAnOpenServer(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	status, body, _ := call(t, s, "POST", "/api/keys", "", []byte(`{"name":"runner","role":"WORKER","queues":["gpu"]}`))
	if status != 409 || !strings.Contains(string(body), "WORKER") || !strings.Contains(string(body), "ADMIN key first") {
		t.Fatalf("a WORKER key as the first key of an open server: %d %s; want 409 saying to create an ADMIN key first", status, body)
	}
	if status, body, _ := call(t, s, "GET", "/api/keys", "", nil); status != 200 || strings.Contains(string(body), "runner") {
		t.Fatalf("after the refusal, the server is no longer open or the key is stored: %d %s", status, body)
	}
	status, body, _ = call(t, s, "POST", "/api/keys", "", []byte(`{"name":"root","role":"ADMIN"}`))
	var admin storedKey
	if status != 201 || json.Unmarshal(body, &admin) != nil {
		t.Fatalf("the first ADMIN key: %d %s", status, body)
	}
	untilStatus(t, "the ADMIN key", waitLimit, 200, func(s *server) int { return keyStatus(t, s, admin.Secret, "root") }, s)
	if status, body, _ := call(t, s, "POST", "/api/keys", admin.Secret, []byte(`{"name":"runner","role":"WORKER","queues":["gpu"]}`)); status != 201 {
		t.Fatalf("the WORKER key after an ADMIN key: %d %s", status, body)
	}
}
