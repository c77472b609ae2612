package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// storedKey is a stored API key as /api/keys answers it.
type storedKey struct {
	Name, Role, Source, Hint, CreatedBy, CreatedVia string
	RotatedBy, RotatedVia, LastUsedFrom, Note       string
	Secret                                          string
	Sessions, Queues                                []string
	CreatedAt                                       time.Time
	ExpiresAt, RotatedAt, LastUsedAt                *time.Time
}

// keyStatus is the status of GET /api/sessions on s with key.
func keyStatus(t *testing.T, s *server, key, _ string) int {
	t.Helper()
	status, _, _ := call(t, s, "GET", "/api/sessions", key, nil)
	return status
}

// untilStatus polls fn until it answers want on every server, or the
// deadline passes; it returns how long that took.
func untilStatus(t *testing.T, what string, deadline time.Duration, want int, fn func(*server) int, servers ...*server) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		all := true
		for _, s := range servers {
			if fn(s) != want {
				all = false
			}
		}
		if all {
			return time.Since(start)
		}
		if time.Since(start) > deadline {
			t.Fatalf("%s: not %d on every instance within %s", what, want, deadline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStoredAPIKeys is issue 22 §1 through the real binary, with two
// instances on one database: a key created over REST on A opens B; a
// rotation over MCP refuses the old secret on both within 2 s; a key with a
// short expiry is refused after it; a revoke over the CLI refuses the key
// on both; bad bodies get field-named 400s and change nothing; the audit
// events name the actor and the door and hold no secret.
func TestStoredAPIKeys(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	env := []string{"YUKTA_API_KEYS=" + writeKeyFile(t)}
	a := startServer(t, serverOptions{DSN: dsn, Env: env})
	b := startServer(t, serverOptions{DSN: dsn, Env: env})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	admin := testKeys["admin"]
	var secrets []string

	// Create over REST on A; the secret is shown once.
	status, body, h := call(t, a, "POST", "/api/keys", admin, []byte(`{"name":"ci-bot","role":"ADMIN","sessions":["alpha","beta"]}`))
	var created storedKey
	if status != 201 || h.Get("Cache-Control") != "no-store" || json.Unmarshal(body, &created) != nil {
		t.Fatalf("create: %d %s", status, body)
	}
	createdAt := time.Now()
	if !strings.HasPrefix(created.Secret, "yk_") || len(created.Secret) != 51 || created.Hint != created.Secret[:9] ||
		created.CreatedBy != "key:admin" || created.CreatedVia != "rest" || created.Role != "ADMIN" ||
		strings.Join(created.Sessions, ",") != "alpha,beta" || created.ExpiresAt != nil || created.Source != "api" {
		t.Fatalf("create answer: %s", body)
	}
	secrets = append(secrets, created.Secret)

	// Used on B (and on A).
	took := untilStatus(t, "the new key", 2*time.Second, 200, func(s *server) int { return keyStatus(t, s, created.Secret, "ci-bot") }, a, b)
	t.Logf("created key accepted on both instances %d ms after the create answer", took.Milliseconds())
	_ = createdAt

	// Listed on B with the configured keys, no secret anywhere.
	status, body, _ = call(t, b, "GET", "/api/keys", admin, nil)
	var list struct{ Items []storedKey }
	if status != 200 || json.Unmarshal(body, &list) != nil {
		t.Fatalf("list: %d %s", status, body)
	}
	sources := map[string]string{}
	for _, k := range list.Items {
		sources[k.Name] = k.Source
		if k.Secret != "" {
			t.Fatalf("list shows a secret: %s", body)
		}
	}
	if sources["ci-bot"] != "api" || sources["admin"] != "YUKTA_API_KEYS" || sources["viewer"] != "YUKTA_API_KEYS" {
		t.Fatalf("list sources %v: %s", sources, body)
	}
	if strings.Contains(string(body), created.Secret[len(created.Hint):]) {
		t.Fatalf("list holds the secret: %s", body)
	}

	// The last use is recorded with its address, off the request path.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body, _ = call(t, b, "GET", "/api/keys/ci-bot", admin, nil)
		var k storedKey
		_ = json.Unmarshal(body, &k)
		if k.LastUsedAt != nil && k.LastUsedFrom == "127.0.0.1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lastUsedAt/lastUsedFrom not recorded: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Rotate over MCP on A: the old secret dies on both within 2 s.
	cs := mustConnect(t, a.URL, admin)
	var rotated storedKey
	mustCall(t, cs, "rotate_api_key", map[string]any{"name": "ci-bot"}, &rotated)
	if !strings.HasPrefix(rotated.Secret, "yk_") || rotated.Secret == created.Secret || rotated.RotatedBy != "key:admin" || rotated.RotatedVia != "mcp" {
		t.Fatalf("rotate answer: %+v", rotated)
	}
	secrets = append(secrets, rotated.Secret)
	took = untilStatus(t, "the rotated-out secret", 2*time.Second, 401, func(s *server) int { return keyStatus(t, s, created.Secret, "ci-bot") }, a, b)
	t.Logf("rotated-out secret refused on both instances %d ms after the rotate answer", took.Milliseconds())
	untilStatus(t, "the rotated-in secret", 2*time.Second, 200, func(s *server) int { return keyStatus(t, s, rotated.Secret, "ci-bot") }, a, b)
	// Five more rotations over REST on A, each old secret refused on B.
	var worst time.Duration
	for range 5 {
		old := rotated.Secret
		status, body, _ := call(t, a, "POST", "/api/keys/ci-bot/rotate", admin, nil)
		if status != 200 || json.Unmarshal(body, &rotated) != nil {
			t.Fatalf("rotate: %d %s", status, body)
		}
		secrets = append(secrets, rotated.Secret)
		worst = max(worst, untilStatus(t, "a rotated-out secret on B", 2*time.Second, 401, func(s *server) int { return keyStatus(t, s, old, "") }, b))
	}
	t.Logf("over 5 REST rotations on A, the old secret was refused on B at most %d ms after the answer", worst.Milliseconds())
	untilStatus(t, "the last rotated-in secret", 2*time.Second, 200, func(s *server) int { return keyStatus(t, s, rotated.Secret, "ci-bot") }, a, b)

	// A key with a short expiry works, then is refused after it.
	status, body, _ = call(t, b, "POST", "/api/keys", admin, []byte(`{"name":"brief","role":"VIEWER","ttl":"3s"}`))
	var brief storedKey
	if status != 201 || json.Unmarshal(body, &brief) != nil || brief.ExpiresAt == nil {
		t.Fatalf("create brief: %d %s", status, body)
	}
	secrets = append(secrets, brief.Secret)
	sessions := func(s *server) int {
		st, _, _ := call(t, s, "GET", "/api/sessions", brief.Secret, nil)
		return st
	}
	untilStatus(t, "the brief key", 2*time.Second, 200, sessions, a, b)
	untilStatus(t, "the expired key", 10*time.Second, 401, sessions, a, b)
	if now := time.Now(); now.Before(*brief.ExpiresAt) {
		t.Fatalf("the brief key was refused at %s, before it expired at %s", now, brief.ExpiresAt)
	}

	// Revoke over the CLI: refused on both.
	out := yuktaAs(t, a.URL, admin, "keys", "revoke", "ci-bot")
	cliWant(t, out, 0, "ci-bot")
	took = untilStatus(t, "the revoked key", 2*time.Second, 401, func(s *server) int { return keyStatus(t, s, rotated.Secret, "ci-bot") }, a, b)
	t.Logf("revoked key refused on both instances %d ms after the CLI returned", took.Milliseconds())

	// The CLI creates and lists too.
	out = yuktaAs(t, b.URL, admin, "keys", "create", "deploy", "--role", "OPERATOR", "--sessions", "alpha", "--expires", "720h", "-o", "json")
	cliWant(t, out, 0, `"secret"`)
	var viaCLI storedKey
	if err := json.Unmarshal([]byte(out.stdout), &viaCLI); err != nil || viaCLI.CreatedVia != "cli (claimed)" || viaCLI.Role != "OPERATOR" || viaCLI.ExpiresAt == nil {
		t.Fatalf("keys create -o json: %v\n%s", err, out)
	}
	secrets = append(secrets, viaCLI.Secret)
	out = yuktaAs(t, b.URL, admin, "keys", "list")
	cliWant(t, out, 0, "deploy", "OPERATOR", "YUKTA_API_KEYS")
	if strings.Contains(out.stdout, viaCLI.Secret) {
		t.Fatalf("keys list prints a secret\n%s", out)
	}
	// A new expiry set over the CLI on B (PATCH /api/keys/{name}): the key
	// works until then and is refused on both instances after it.
	deploy := func(s *server) int { return keyStatus(t, s, viaCLI.Secret, "deploy") }
	untilStatus(t, "deploy before its new expiry", 2*time.Second, 200, deploy, a, b)
	out = yuktaAs(t, b.URL, admin, "keys", "expire", "deploy", "2s")
	cliWant(t, out, 0, "expiry set")
	took = untilStatus(t, "deploy after its new expiry", 10*time.Second, 401, deploy, a, b)
	t.Logf("a key given a 2 s expiry over the CLI was refused on both instances %d ms after the CLI returned", took.Milliseconds())
	if st, body, _ := call(t, a, "PATCH", "/api/keys/deploy", admin, []byte(`{"ttl":"1h"}`)); st != 409 || !strings.Contains(string(body), "create it again") {
		t.Fatalf("a new expiry for an expired key: %d %s", st, body)
	}

	// Bad input: field-named 400s, 409s with the next step, and nothing changed.
	var before int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM api_keys`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body   string
		status int
		want   []string
	}{
		{`{"name":"bad name","role":"ROOT","sessions":[],"expiresAt":"tomorrow"}`, 400, []string{`"name"`, `"role"`, `"sessions"`, `"expiresAt"`}},
		{`{"name":"x","role":"VIEWER","expiresAt":"2001-01-01T00:00:00Z"}`, 400, []string{`"expiresAt"`, "future"}},
		{`{"name":"x","role":"VIEWER","ttl":"100000h"}`, 400, []string{`"ttl"`}},
		{`{"name":"x","role":"VIEWER","ttl":"1h","expiresAt":"2099-01-01T00:00:00Z"}`, 400, []string{`"ttl"`}},
		{`{"name":"x","role":"VIEWER","colour":1}`, 400, []string{"colour"}},
		{`{"name":"x","role":"VIEWER"`, 400, nil},
		{`{"name":"admin","role":"VIEWER"}`, 409, []string{"YUKTA_API_KEYS"}},
		{`{"name":"DEPLOY","role":"VIEWER"}`, 409, []string{"rotate"}},
	} {
		status, body, _ := call(t, a, "POST", "/api/keys", admin, []byte(c.body))
		if status != c.status || !strings.Contains(string(body), "urn:yukta:problem") {
			t.Fatalf("POST %s: %d %s, want %d", c.body, status, body, c.status)
		}
		for _, w := range c.want {
			if !strings.Contains(string(body), w) {
				t.Fatalf("POST %s: %s lacks %s", c.body, body, w)
			}
		}
	}
	if status, body, _ := call(t, a, "POST", "/api/keys", testKeys["operator"], []byte(`{"name":"x","role":"VIEWER"}`)); status != 403 {
		t.Fatalf("an OPERATOR creates a key: %d %s", status, body)
	}
	for _, p := range []string{"/api/keys/nobody/rotate", "/api/keys/nobody"} {
		method := "POST"
		if !strings.HasSuffix(p, "rotate") {
			method = "DELETE"
		}
		if status, body, _ := call(t, a, method, p, admin, nil); status != 404 || !strings.Contains(string(body), "yukta keys list") && !strings.Contains(string(body), "GET /api/keys") {
			t.Fatalf("%s %s: %d %s", method, p, status, body)
		}
	}
	// The same over MCP: each field named, the next tool said.
	for _, c := range []struct {
		tool string
		args map[string]any
		want []string
	}{
		{"create_api_key", map[string]any{"name": "bad name", "role": "ROOT", "sessions": []string{}, "expiresAt": "tomorrow"}, []string{"name", "role", "sessions", "expiresAt", "Nothing was changed"}},
		{"create_api_key", map[string]any{"name": "admin", "role": "VIEWER"}, []string{"YUKTA_API_KEYS", "list_api_keys"}},
		{"rotate_api_key", map[string]any{"name": "nobody"}, []string{"nobody", "list_api_keys"}},
		{"revoke_api_key", map[string]any{"name": "nobody"}, []string{"nobody", "list_api_keys"}},
	} {
		res := mcpCall(t, cs, c.tool, c.args, nil)
		if !res.IsError {
			t.Fatalf("%s(%v) succeeded", c.tool, c.args)
		}
		for _, w := range c.want {
			if !strings.Contains(text(res), w) {
				t.Fatalf("%s(%v): %q lacks %q", c.tool, c.args, text(res), w)
			}
		}
	}
	var after int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM api_keys`).Scan(&after); err != nil || after != before {
		t.Fatalf("bad requests changed the keys: %d rows, then %d (%v)", before, after, err)
	}

	// The audit trail: every change with its actor and door, no secret.
	rows, err := db.Query(context.Background(), `SELECT type, actor, channel, data::text FROM events WHERE type LIKE 'APIKey%' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var trail []string
	for rows.Next() {
		var typ, actor, channel, data string
		if err := rows.Scan(&typ, &actor, &channel, &data); err != nil {
			t.Fatal(err)
		}
		trail = append(trail, typ+" "+actor+" "+channel)
		for _, s := range secrets {
			if strings.Contains(data, s) || strings.Contains(data, s[len(s)-20:]) {
				t.Fatalf("event %s holds a secret: %s", typ, data)
			}
		}
		if !strings.Contains(data, `"name"`) {
			t.Fatalf("event %s does not name the key: %s", typ, data)
		}
	}
	want := "APIKeyCreated key:admin rest|APIKeyRotated key:admin mcp|" + strings.Repeat("APIKeyRotated key:admin rest|", 5) + "APIKeyCreated key:admin rest|APIKeyRevoked key:admin cli (claimed)|APIKeyCreated key:admin cli (claimed)|APIKeyExpiryChanged key:admin cli (claimed)"
	if got := strings.Join(trail, "|"); got != want {
		t.Fatalf("audit trail\n got %s\nwant %s", got, want)
	}
	// No stored secret, and no log line holds one.
	text := databaseText(t, db)
	for _, s := range secrets {
		if strings.Contains(text, s) || strings.Contains(a.logs.String(), s) || strings.Contains(b.logs.String(), s) {
			t.Fatal("a secret is stored or logged")
		}
	}
}

// TestStoredKeyClosesOpenServer: a loopback server with no key is open; the
// first stored key closes REST and MCP at once, and the create answer says
// so.
func TestStoredKeyClosesOpenServer(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	if status, body, _ := call(t, s, "GET", "/api/sessions", "", nil); status != 200 {
		t.Fatalf("open server: %d %s", status, body)
	}
	status, body, _ := call(t, s, "POST", "/api/keys", "", []byte(`{"name":"first","role":"ADMIN"}`))
	var k storedKey
	if status != 201 || json.Unmarshal(body, &k) != nil || !strings.Contains(k.Note, "no longer open") || k.CreatedBy != "anonymous" {
		t.Fatalf("first key: %d %s", status, body)
	}
	if status, body, _ := call(t, s, "GET", "/api/sessions", "", nil); status != 401 {
		t.Fatalf("REST without a key after the first stored key: %d %s", status, body)
	}
	if _, err := mcpConnect(t.Context(), s.URL, "/mcp", ""); err == nil {
		t.Fatal("MCP without a key after the first stored key: connected")
	}
	if status, body, _ := call(t, s, "GET", "/api/sessions", k.Secret, nil); status != 200 {
		t.Fatalf("with the stored key: %d %s", status, body)
	}
}

// TestStoredKeysDocExamples runs the examples of docs/security.md ("Stored
// keys", curl) and docs/cli.md ("API keys", the yukta client) as written
// against a real server: each command succeeds and does what the page says.
func TestStoredKeysDocExamples(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: []string{"YUKTA_API_KEYS=" + writeKeyFile(t)}})
	admin := testKeys["admin"]
	run := func(block string) string {
		t.Helper()
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(block, "http://127.0.0.1:8080", s.URL))
		cmd.Env = []string{"PATH=" + filepath.Dir(binary(t)) + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "YUKTA_SERVER=" + s.URL, "YUKTA_API_KEY=" + admin}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the example failed: %v\n%s\n%s", err, block, out)
		}
		return string(out)
	}

	out := run(testedBlocks(t, "docs/security.md", "TestStoredKeysDocExamples", 1)[0].Body)
	var k storedKey
	if err := json.Unmarshal([]byte(out), &k); err != nil || k.Name != "ci-bot" || k.Role != "OPERATOR" || !strings.HasPrefix(k.Secret, "yk_") || k.ExpiresAt == nil {
		t.Fatalf("security.md's curl example: %v\n%s", err, out)
	}
	if status, body, _ := call(t, s, "GET", "/api/sessions", k.Secret, nil); status != 200 {
		t.Fatalf("the key it created: %d %s", status, body)
	}
	if status, body, _ := call(t, s, "DELETE", "/api/keys/ci-bot", admin, nil); status != 204 {
		t.Fatalf("revoke it: %d %s", status, body)
	}

	out = run(testedBlocks(t, "docs/cli.md", "TestStoredKeysDocExamples", 1)[0].Body)
	for _, want := range []string{"key: ci-bot\naction: created\nrole: OPERATOR\nsessions: etl,web\n", "key: gpu-pool\naction: created\nrole: WORKER\nsessions: all\nqueues: gpu,render\n",
		"YUKTA_API_KEYS", "action: rotated", "key: ci-bot\naction: revoked"} {
		if !strings.Contains(out, want) {
			t.Fatalf("cli.md's example printed no %q:\n%s", want, out)
		}
	}
	if status, body, _ := call(t, s, "GET", "/api/keys/ci-bot", admin, nil); status != 404 {
		t.Fatalf("after the example's revoke: %d %s", status, body)
	}
}

// TestStreamOfRevokedStoredKeyEnds: an event stream opened on instance B
// with a stored key ends, with an error record saying why, once an ADMIN
// revokes that key through instance A; a stream of another key stays open.
func TestStreamOfRevokedStoredKeyEnds(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	env := []string{"YUKTA_API_KEYS=" + writeKeyFile(t)}
	a := startServer(t, serverOptions{DSN: dsn, Env: env})
	b := startServer(t, serverOptions{DSN: dsn, Env: env})
	admin := testKeys["admin"]
	secrets := map[string]string{}
	for _, name := range []string{"watcher", "bystander"} {
		status, body, _ := call(t, a, "POST", "/api/keys", admin, []byte(`{"name":"`+name+`","role":"VIEWER"}`))
		var k storedKey
		if status != 201 || json.Unmarshal(body, &k) != nil {
			t.Fatalf("create %s: %d %s", name, status, body)
		}
		secrets[name] = k.Secret
		untilStatus(t, name, 2*time.Second, 200, func(s *server) int { return keyStatus(t, s, k.Secret, name) }, b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watched, bystander := eventStream(t, ctx, b, secrets["watcher"]), eventStream(t, ctx, b, secrets["bystander"])
	time.Sleep(1200 * time.Millisecond) // past two re-checks: both streams are held open
	select {
	case e := <-watched:
		t.Fatalf("the stream ended before its key was revoked: %s", e.last)
	case e := <-bystander:
		t.Fatalf("the bystander's stream ended: %s", e.last)
	default:
	}

	if status, body, _ := call(t, a, "DELETE", "/api/keys/watcher", admin, nil); status != 200 && status != 204 {
		t.Fatalf("revoke on A: %d %s", status, body)
	}
	revoked := time.Now()
	select {
	case e := <-watched:
		t.Logf("the stream on B ended %d ms after the key was revoked on A", e.at.Sub(revoked).Milliseconds())
		if !strings.Contains(e.last, "event: error") || !strings.Contains(e.last, `"status":401`) {
			t.Fatalf("the stream's last record does not say its key is no longer valid:\n%s", e.last)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream on B is still open 5 s after its key was revoked on A")
	}
	select {
	case e := <-bystander:
		t.Fatalf("the bystander's stream ended with the other key: %s", e.last)
	default:
	}
	if status := keyStatus(t, b, secrets["watcher"], "watcher"); status != http.StatusUnauthorized {
		t.Fatalf("the revoked key on B: %d, want 401", status)
	}
}
