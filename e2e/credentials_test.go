package e2e

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/mcpserver"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/domain/supervisor"
)

// issued is the answer of POST /api/supervisors/{id}/credential.
type issued struct {
	Token, SupervisorID, Hint, CreatedBy, CreatedVia string
	Rotated                                          bool
	ExpiresAt, CreatedAt                             time.Time
	AllowedAddresses                                 []string
}

// TestSupervisorCredentials is T5 through the real binary: an ADMIN issues,
// reads, rotates and revokes a supervisor credential over REST, the CLI and
// MCP; the agent API takes the current token only (the old one is refused
// on every request after a rotation or a revoke, and a token from outside
// allowedAddresses is refused); other keys cannot issue; no read, event,
// stored row or server log line holds a token.
func TestSupervisorCredentials(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_API_KEYS=" + writeKeyFile(t)}})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	admin, viewer := testKeys["admin"], testKeys["viewer"]
	for id, doc := range map[string]string{"agent": `{"name":"Agent","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`, "guard": seedGuard} {
		if status, b, _ := call(t, s, "PUT", "/api/supervisors/"+id, admin, []byte(strings.Replace(doc, `,
  "parentId": "ops"`, "", 1))); status != 201 {
			t.Fatalf("PUT %s: %d %s", id, status, b)
		}
	}
	var tokens []string // every token issued, to look for afterwards
	issue := func(key, query string) (int, issued, []byte, string) {
		t.Helper()
		status, b, h := call(t, s, "POST", "/api/supervisors/agent/credential"+query, key, nil)
		var c issued
		if status == 201 {
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			tokens = append(tokens, c.Token)
		}
		return status, c, b, h.Get("Cache-Control")
	}
	self := func(token string) int {
		t.Helper()
		status, _, _ := call(t, s, "GET", "/api/agent/v1/self", token, nil)
		return status
	}

	// Issue over REST: 201 with the token, once, not to be cached.
	status, first, b, cache := issue(admin, "?ttlHours=2&allowedAddresses="+url.QueryEscape("127.0.0.0/8, ::1"))
	if status != 201 || cache != "no-store" || first.Rotated || first.SupervisorID != "agent" || first.CreatedBy != "key:admin" ||
		first.CreatedVia != "rest" || first.ExpiresAt.Sub(first.CreatedAt) != 2*time.Hour || strings.Join(first.AllowedAddresses, ",") != "127.0.0.0/8,::1/128" {
		t.Fatalf("issue: %d %s (Cache-Control %q)", status, b, cache)
	}
	if _, err := supervisor.ParseToken(first.Token); err != nil || !strings.HasPrefix(first.Token, "yks_") || first.Hint != first.Token[:10] {
		t.Fatalf("token %q (%v), want yks_ and a valid checksum", first.Hint, err)
	}
	if st := self(first.Token); st != 200 {
		t.Fatalf("the agent API with the new token: %d, want 200", st)
	}

	// Read it back: metadata for a VIEWER, never the token.
	status, b, _ = call(t, s, "GET", "/api/supervisors/agent/credential", viewer, nil)
	var meta struct {
		Hint       string
		LastUsedAt *time.Time
	}
	if status != 200 || json.Unmarshal(b, &meta) != nil || meta.Hint != first.Hint || meta.LastUsedAt == nil || strings.Contains(string(b), first.Token[10:]) {
		t.Fatalf("GET credential: %d %s, want the hint and a last use, no token", status, b)
	}
	status, b, _ = call(t, s, "GET", "/api/supervisors/guard/credential", viewer, nil)
	if status != 404 || !strings.Contains(string(b), `supervisor \"guard\" has no credential; an ADMIN issues one with POST /api/supervisors/guard/credential`) {
		t.Fatalf("GET a credential that does not exist: %d %s", status, b)
	}

	// Refused: other roles, the limited ADMIN key, bad input, no supervisor.
	before := credentialRows(t, db)
	for _, tc := range []struct {
		key, method, path string
		status            int
		has               string
	}{
		{viewer, "POST", "/api/supervisors/agent/credential", 403, "key:viewer"},
		{testKeys["operator"], "DELETE", "/api/supervisors/agent/credential", 403, "key:operator"},
		{testKeys["limited"], "POST", "/api/supervisors/agent/credential", 403, "key:limited"},
		{admin, "POST", "/api/supervisors/agent/credential?ttlHours=0", 400, "ttlHours"},
		{admin, "POST", "/api/supervisors/agent/credential?ttlHours=8761", 400, "ttlHours"},
		{admin, "POST", "/api/supervisors/agent/credential?allowedAddresses=10.0.0.0/8,nowhere", 400, `"path":"allowedAddresses[1]"`},
		{admin, "POST", "/api/supervisors/ghost/credential", 404, `supervisor \"ghost\" does not exist`},
		{admin, "DELETE", "/api/supervisors/guard/credential", 404, `supervisor \"guard\" has no credential`},
	} {
		status, b, _ := call(t, s, tc.method, tc.path, tc.key, nil)
		if status != tc.status || !strings.Contains(string(b), tc.has) {
			t.Errorf("%s %s: %d %s, want %d with %s", tc.method, tc.path, status, b, tc.status, tc.has)
		}
	}
	if after := credentialRows(t, db); after != before {
		t.Fatalf("refused calls changed the credentials: %s -> %s", before, after)
	}

	// Rotate with the CLI: the first token is refused from then on.
	out := yuktaAs(t, s.URL, admin, "supervisors", "credential", "create", "agent", "--allow", "127.0.0.1")
	second := cliField(t, out, "token")
	tokens = append(tokens, second)
	if out.code != 0 || cliField(t, out, "action") != "rotated (the earlier token no longer works)" || cliField(t, out, "allowed") != "127.0.0.1/32" {
		t.Fatalf("CLI create:\n%s", out)
	}
	for range 5 {
		if st := self(first.Token); st != 401 {
			t.Fatalf("the rotated token on the agent API: %d, want 401", st)
		}
	}
	if st := self(second); st != 200 {
		t.Fatalf("the CLI's token on the agent API: %d, want 200", st)
	}
	out = yuktaAs(t, s.URL, viewer, "supervisors", "credential", "show", "agent")
	if out.code != 0 || cliField(t, out, "hint") != second[:10] || strings.Contains(out.stdout, second[10:]) ||
		!strings.Contains(out.stdout, "by key:admin via cli (claimed)") {
		t.Fatalf("CLI show:\n%s", out)
	}

	// Rotate over MCP, to addresses the test does not connect from: the
	// token is refused from 127.0.0.1.
	cs := mustConnect(t, s.URL, admin)
	var viaMCP mcpserver.CredentialOut
	mustCall(t, cs, "create_credential", map[string]any{"supervisorId": "agent", "allowedAddresses": []string{"192.0.2.0/24"}}, &viaMCP)
	tokens = append(tokens, viaMCP.Token)
	if !viaMCP.Rotated || self(viaMCP.Token) != 401 || self(second) != 401 {
		t.Fatalf("create_credential: %+v; want a rotation whose token is refused outside 192.0.2.0/24, and the CLI's refused", viaMCP)
	}
	var det mcpserver.SupervisorDetails
	mustCall(t, mustConnect(t, s.URL, viewer), "get_supervisor", map[string]any{"supervisorId": "agent"}, &det)
	if det.Credential == nil || det.Credential.Hint != viaMCP.Hint || det.Credential.CreatedVia != "mcp" {
		t.Fatalf("get_supervisor: %+v", det.Credential)
	}

	// Issue one more, then revoke it: refused at once.
	status, last, b, _ := issue(admin, "")
	if status != 201 || !last.Rotated || last.ExpiresAt.Sub(last.CreatedAt) != 720*time.Hour || len(last.AllowedAddresses) != 0 || self(last.Token) != 200 {
		t.Fatalf("issue with the defaults: %d %s", status, b)
	}
	if status, b, _ := call(t, s, "DELETE", "/api/supervisors/agent/credential", admin, nil); status != 204 {
		t.Fatalf("DELETE credential: %d %s", status, b)
	}
	if st := self(last.Token); st != 401 {
		t.Fatalf("the revoked token on the agent API: %d, want 401", st)
	}
	if status, _, _ := call(t, s, "GET", "/api/supervisors/agent/credential", admin, nil); status != 404 {
		t.Fatalf("GET after revoke: %d, want 404", status)
	}

	// Deleting the supervisor deletes its credential.
	status, again, _, _ := issue(admin, "")
	if status != 201 {
		t.Fatalf("issue again: %d", status)
	}
	if status, b, _ := call(t, s, "DELETE", "/api/supervisors/agent", admin, nil); status != 200 {
		t.Fatalf("DELETE supervisor: %d %s", status, b)
	}
	if rows := credentialRows(t, db); rows != "0" || self(again.Token) != 401 {
		t.Fatalf("after the supervisor's delete: %s credential rows, token answered %d; want none and 401", rows, self(again.Token))
	}

	// The audit trail: every issue and revoke, by whom, through which door.
	var trail []string
	rows, err := db.Query(context.Background(), `SELECT type || ' ' || actor || ' ' || channel FROM events WHERE type LIKE 'SupervisorCredential%' ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		trail = append(trail, l)
	}
	want := []string{"SupervisorCredentialIssued key:admin rest", "SupervisorCredentialIssued key:admin cli (claimed)",
		"SupervisorCredentialIssued key:admin mcp", "SupervisorCredentialIssued key:admin rest", "SupervisorCredentialRevoked key:admin rest",
		"SupervisorCredentialIssued key:admin rest"}
	if strings.Join(trail, "\n") != strings.Join(want, "\n") {
		t.Fatalf("credential events:\n%s\nwant\n%s", strings.Join(trail, "\n"), strings.Join(want, "\n"))
	}

	// No token anywhere it could leak: the database (every row of every
	// table, as text) and the server's log.
	dump := databaseText(t, db)
	logs := s.logs.String()
	for _, tok := range tokens {
		secret := tok[10:]
		if strings.Contains(dump, secret) || strings.Contains(logs, secret) {
			t.Fatalf("a token (hint %s) is in the database or the server log", tok[:10])
		}
	}
	if len(tokens) != 5 {
		t.Fatalf("%d tokens issued, want 5", len(tokens))
	}
}

// credentialRows describes the credential rows (count and hashes), to tell
// whether a call changed them.
func credentialRows(t *testing.T, db *pgxpool.Pool) string {
	t.Helper()
	var n int
	var hashes string
	if err := db.QueryRow(context.Background(), `SELECT count(*), coalesce(string_agg(encode(token_hash, 'hex'), ','), '') FROM supervisor_credentials`).Scan(&n, &hashes); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return "0"
	}
	return hashes
}

// databaseText is every row of every table of the public schema, as JSON
// text.
func databaseText(t *testing.T, db *pgxpool.Pool) string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT quote_ident(table_name) FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if rows.Err() != nil || len(tables) < 10 {
		t.Fatalf("tables %v, %v", tables, rows.Err())
	}
	var b strings.Builder
	for _, tbl := range tables {
		var text string
		if err := db.QueryRow(context.Background(), `SELECT coalesce(string_agg(row_to_json(x)::text, E'\n'), '') FROM `+tbl+` x`).Scan(&text); err != nil {
			t.Fatal(err)
		}
		b.WriteString(text)
	}
	return b.String()
}
