package mcpserver

import (
	"crypto/rand"
	"crypto/sha256"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// credentialServer is newTestServer with the credential use cases wired as
// bootstrap wires them, over the test's database.
func credentialServer(t *testing.T) (*httptest.Server, *testEnv) {
	t.Helper()
	e := newEnv(t)
	tx := postgres.NewCredentialTransactor(e.pool)
	creds := postgres.NewCredentialStore(e.pool)
	e.deps.IssueCredential = supervisorapp.NewIssueCredential(tx, rand.Reader, time.Now)
	e.deps.GetCredential = supervisorapp.NewGetCredential(postgres.NewSupervisorStore(e.pool), creds)
	e.deps.RevokeCredential = supervisorapp.NewRevokeCredential(tx, time.Now)
	h, err := New(e.deps, "test", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(authenticated(t, h))
	t.Cleanup(ts.Close)
	return ts, e
}

// TestCredentialTools: an ADMIN issues, rotates and revokes a credential
// over MCP; get_supervisor shows its metadata, never the token; other keys
// are refused and change nothing.
func TestCredentialTools(t *testing.T) {
	t.Parallel()
	ts, e := credentialServer(t)
	applySupervisors(t, e)
	admin := connect(t, ts.URL, secretOf("admin"))
	viewer := connect(t, ts.URL, secretOf("viewer"))
	credentials := func() (n int, hashes [][]byte) {
		rows, err := e.admin.Query(t.Context(), `SELECT token_hash FROM supervisor_credentials`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var h []byte
			if err := rows.Scan(&h); err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, h)
		}
		return len(hashes), hashes
	}

	var first CredentialOut
	decode(t, callOK(t, admin, "create_credential", map[string]any{"supervisorId": "ops", "ttlHours": 24, "allowedAddresses": []string{"10.1.2.3/8"}}), &first)
	if _, err := supervisor.ParseToken(first.Token); err != nil || first.Rotated || first.SupervisorID != "ops" || first.Hint != first.Token[:10] ||
		strings.Join(first.AllowedAddresses, ",") != "10.0.0.0/8" {
		t.Fatalf("create_credential: %+v (%v)", first, err)
	}
	if n, hashes := credentials(); n != 1 || sha256.Sum256([]byte(first.Token)) != [32]byte(hashes[0]) {
		t.Fatalf("stored: %d credentials, want one holding the token's SHA-256", n)
	}
	expires, err := time.Parse(time.RFC3339Nano, first.ExpiresAt)
	if err != nil || time.Until(expires) < 23*time.Hour || time.Until(expires) > 24*time.Hour {
		t.Fatalf("expiresAt %s, want in 24 hours", first.ExpiresAt)
	}

	// Every read shows the metadata and never the token.
	secret := first.Token[len(first.Hint):]
	res := callOK(t, viewer, "get_supervisor", map[string]any{"supervisorId": "ops"})
	var det SupervisorDetails
	decode(t, res, &det)
	if det.Credential == nil || det.Credential.Hint != first.Hint || det.Credential.CreatedBy != "key:admin" || det.Credential.CreatedVia != Channel ||
		det.Credential.ExpiresAt != first.ExpiresAt || det.Credential.LastUsedAt != "" {
		t.Fatalf("get_supervisor credential: %+v", det.Credential)
	}
	for _, r := range []string{text(res), text(callOK(t, viewer, "list_supervisors", nil)), text(callOK(t, admin, "get_supervisor", map[string]any{"supervisorId": "ops"}))} {
		if strings.Contains(r, secret) {
			t.Fatalf("a read shows the token: %s", r)
		}
	}
	var guard SupervisorDetails
	decode(t, callOK(t, viewer, "get_supervisor", map[string]any{"supervisorId": "guard"}), &guard)
	if guard.Credential != nil {
		t.Fatalf("guard has no credential, get_supervisor shows %+v", guard.Credential)
	}

	// Rotation: a new token, the old hash gone.
	var second CredentialOut
	decode(t, callOK(t, admin, "create_credential", map[string]any{"supervisorId": "ops"}), &second)
	if !second.Rotated || second.Token == first.Token || len(second.AllowedAddresses) != 0 {
		t.Fatalf("rotation: %+v", second)
	}
	if n, hashes := credentials(); n != 1 || sha256.Sum256([]byte(second.Token)) != [32]byte(hashes[0]) {
		t.Fatalf("after rotation: %d credentials, want the new token's only", n)
	}

	// Refusals change nothing: roles, a limited key, bad input, no supervisor.
	before := e.rowCounts(t)
	for _, tc := range []struct {
		key, tool string
		args      map[string]any
		want      string
	}{
		{"viewer", "create_credential", map[string]any{"supervisorId": "ops"}, "Forbidden: "},
		{"operator", "revoke_credential", map[string]any{"supervisorId": "ops"}, "Forbidden: "},
		{"limited", "create_credential", map[string]any{"supervisorId": "guard"}, "Forbidden: "},
		{"admin", "create_credential", map[string]any{"supervisorId": "ops", "ttlHours": 9000, "allowedAddresses": []string{"nowhere"}},
			`credential is invalid: ttlHours: 9000 is more than 8760 (a year); send 1 to 8760 and issue the credential again before it expires; allowedAddresses[0]: "nowhere" is not a CIDR`},
		{"admin", "create_credential", map[string]any{"supervisorId": "ghost"}, "Supervisor not found: ghost. Use list_supervisors"},
		{"admin", "revoke_credential", map[string]any{"supervisorId": "guard"}, "Supervisor guard has no credential. Nothing was changed; an ADMIN issues one with create_credential."},
	} {
		cs := admin
		if tc.key != "admin" {
			cs = connect(t, ts.URL, secretOf(tc.key))
		}
		res := call(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.HasPrefix(text(res), tc.want) {
			t.Errorf("%s %s %v: %q, want %q", tc.key, tc.tool, tc.args, text(res), tc.want)
		}
	}
	e.assertRowsUnchanged(t, before, "refused credential tools")
	if n, hashes := credentials(); n != 1 || sha256.Sum256([]byte(second.Token)) != [32]byte(hashes[0]) {
		t.Fatalf("after refusals: %d credentials, want the second token's only", n)
	}

	// Revoke: gone, and get_supervisor shows none.
	var rev RevokeOut
	decode(t, callOK(t, admin, "revoke_credential", map[string]any{"supervisorId": "ops"}), &rev)
	if !rev.Revoked || rev.SupervisorID != "ops" {
		t.Fatalf("revoke_credential: %+v", rev)
	}
	if n, _ := credentials(); n != 0 {
		t.Fatalf("after revoke: %d credentials", n)
	}
	var after SupervisorDetails
	decode(t, callOK(t, viewer, "get_supervisor", map[string]any{"supervisorId": "ops"}), &after)
	if after.Credential != nil || after.ID != "ops" {
		t.Fatalf("get_supervisor after revoke: %+v", after)
	}
	var events int
	if err := e.admin.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE type LIKE 'SupervisorCredential%' AND actor = 'key:admin' AND channel = 'mcp'
		AND data::text NOT LIKE '%'||$1||'%'`, second.Hint).Scan(&events); err != nil || events != 3 {
		t.Fatalf("credential events by key:admin over mcp without the hint: %d, %v; want 3", events, err)
	}
}
