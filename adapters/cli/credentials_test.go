package cli

import (
	"net/http"
	"strings"
	"testing"
)

// The CLI's side of credentials against a recording server (the e2e tests
// drive the real one): what each command sends and prints.
func TestCredentialCommands(t *testing.T) {
	const token = "yks_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnop"
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			writeJSON(w, 201, map[string]any{"token": token, "rotated": r.URL.Query().Get("ttlHours") == "2", "supervisorId": "ops",
				"hint": token[:10], "createdAt": "2026-03-01T12:00:00Z", "expiresAt": "2026-03-31T12:00:00Z",
				"allowedAddresses": []string{"10.0.0.0/8", "192.0.2.7/32"}, "createdBy": "key:admin", "createdVia": "cli (claimed)"})
		case http.MethodGet:
			writeJSON(w, 200, map[string]any{"supervisorId": "ops", "hint": token[:10], "createdAt": "2026-03-01T12:00:00Z",
				"expiresAt": "2026-03-31T12:00:00Z", "allowedAddresses": []string{}, "createdBy": "key:admin", "createdVia": "rest"})
		case http.MethodDelete:
			w.WriteHeader(204)
		}
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}

	out, errOut, code := run(t, env, "supervisors", "credential", "create", "ops", "--allow", "10.0.0.0/8", "--allow", "192.0.2.7")
	want := "supervisor: ops\naction: issued\ntoken: " + token + "\nhint: yks_abcdef\ncreated: 2026-03-01T12:00:00.000Z by key:admin via cli (claimed)\n" +
		"expires: 2026-03-31T12:00:00.000Z\nallowed: 10.0.0.0/8\nallowed: 192.0.2.7/32\n"
	if code != 0 || out != want || !strings.Contains(errOut, "the token is shown this once") {
		t.Fatalf("create: exit %d\nstdout %q\nwant   %q\nstderr %q", code, out, want, errOut)
	}
	r := f.requests()[0]
	if r.Method != http.MethodPost || r.URL.Path != "/api/supervisors/ops/credential" || r.URL.Query().Get("allowedAddresses") != "10.0.0.0/8,192.0.2.7" ||
		r.URL.Query().Has("ttlHours") || r.Header.Get("Yukta-Channel") != "cli" {
		t.Fatalf("create sent %s %s %v", r.Method, r.URL, r.Header)
	}

	// --ttl-hours is sent as given, 0 included (the server refuses it).
	for _, ttl := range []string{"2", "0"} {
		out, _, _ = run(t, env, "supervisors", "credential", "create", "--ttl-hours", ttl, "ops")
		reqs := f.requests()
		if q := reqs[len(reqs)-1].URL.Query(); q.Get("ttlHours") != ttl || q.Has("allowedAddresses") {
			t.Fatalf("create --ttl-hours %s sent %s", ttl, reqs[len(reqs)-1].URL)
		}
	}
	if !strings.Contains(out, "action: issued") {
		t.Fatalf("create: %q", out)
	}
	out, _, _ = run(t, env, "supervisors", "credential", "create", "--ttl-hours", "2", "ops")
	if !strings.Contains(out, "action: rotated (the earlier token no longer works)") {
		t.Fatalf("rotation: %q", out)
	}

	out, _, code = run(t, env, "supervisors", "credential", "show", "ops")
	want = "supervisor: ops\nhint: yks_abcdef\ncreated: 2026-03-01T12:00:00.000Z by key:admin via rest\nexpires: 2026-03-31T12:00:00.000Z\n" +
		"allowed: any address\nlast used: never\n"
	if code != 0 || out != want {
		t.Fatalf("show: exit %d\n%q\nwant\n%q", code, out, want)
	}
	if strings.Contains(out, token[10:]) {
		t.Fatalf("show printed the token")
	}

	out, _, code = run(t, env, "supervisors", "credential", "revoke", "ops")
	r = f.requests()[len(f.requests())-1]
	if code != 0 || out != "supervisor: ops\naction: credential revoked\n" || r.Method != http.MethodDelete || r.URL.Path != "/api/supervisors/ops/credential" ||
		r.Header.Get("Yukta-Channel") != "cli" {
		t.Fatalf("revoke: exit %d %q, sent %s %s", code, out, r.Method, r.URL)
	}

	// Usage errors reach no server.
	n := len(f.requests())
	for _, args := range [][]string{{"credential"}, {"credential", "rotate", "ops"}, {"credential", "create"}, {"credential", "show", "a", "b"}} {
		if _, _, code := run(t, env, "supervisors", args...); code != 2 {
			t.Errorf("supervisors %v: exit %d, want 2", args, code)
		}
	}
	if len(f.requests()) != n {
		t.Errorf("usage errors sent %d requests", len(f.requests())-n)
	}
}

func TestCredentialProblemIsPrinted(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(404)
		_, _ = w.Write([]byte(`{"type":"urn:yukta:problem:not-found","title":"Not Found","status":404,` +
			`"detail":"supervisor \"ops\" has no credential; an ADMIN issues one with POST /api/supervisors/ops/credential"}`))
	})
	out, errOut, code := run(t, map[string]string{"YUKTA_SERVER": f.URL}, "supervisors", "credential", "show", "ops")
	if code != 1 || out != "" || !strings.Contains(errOut, `404 Not Found: supervisor "ops" has no credential`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
