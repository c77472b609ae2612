package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// The CLI's side of stored keys against a recording server (the e2e tests
// drive the real one): what each command sends and prints.
func TestKeyCommands(t *testing.T) {
	const secret = "yk_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnop"
	var mu sync.Mutex
	var bodies []map[string]any
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/keys":
			var b map[string]any
			raw, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(raw, &b)
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			writeJSON(w, 201, map[string]any{"name": b["name"], "role": "OPERATOR", "sessions": []string{"etl", "web"}, "source": "api", "secret": secret,
				"hint": secret[:9], "createdAt": "2026-03-01T12:00:00Z", "expiresAt": "2026-03-31T12:00:00Z", "note": "closed"})
		case r.Method == http.MethodPost:
			writeJSON(w, 200, map[string]any{"name": "ci", "role": "ADMIN", "source": "api", "secret": secret})
		case r.Method == http.MethodGet:
			writeJSON(w, 200, map[string]any{"items": []map[string]any{{"name": "admin", "role": "ADMIN", "source": "YUKTA_API_KEY"},
				{"name": "ci", "role": "OPERATOR", "sessions": []string{"etl"}, "source": "api", "hint": "yk_abcdef", "createdAt": "2026-03-01T12:00:00Z",
					"createdBy": "key:admin", "lastUsedAt": "2026-03-02T12:00:00Z", "lastUsedFrom": "10.0.0.1"}}})
		case r.Method == http.MethodDelete:
			w.WriteHeader(204)
		case r.Method == http.MethodPatch:
			var b map[string]any
			raw, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(raw, &b)
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			writeJSON(w, 200, map[string]any{"name": "ci", "role": "ADMIN", "source": "api", "expiresAt": "2026-03-31T12:00:00Z"})
		}
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}

	out, errOut, code := run(t, env, "keys", "create", "ci", "--role", "OPERATOR", "--sessions", "etl,web", "--expires", "720h")
	want := "key: ci\naction: created\nrole: OPERATOR\nsessions: etl,web\nexpires: 2026-03-31T12:00:00.000Z\nsecret: " + secret + "\n"
	if code != 0 || out != want || !strings.Contains(errOut, "shown this once") || !strings.Contains(errOut, "closed") {
		t.Fatalf("create: exit %d\nstdout %q\nwant   %q\nstderr %q", code, out, want, errOut)
	}
	// --expires: a duration is sent as ttl, anything else as expiresAt;
	// --sessions given empty is sent (the server refuses it).
	run(t, env, "keys", "create", "ci", "--role", "VIEWER", "--expires", "2030-01-01T00:00:00Z", "--sessions", "")
	run(t, env, "keys", "create", "ci", "--role", "VIEWER")
	// --queues is sent as a list, given empty too; left out, not at all.
	run(t, env, "keys", "create", "w", "--role", "WORKER", "--queues", "gpu,build")
	run(t, env, "keys", "create", "w", "--role", "WORKER", "--queues", "")
	mu.Lock()
	got := bodies
	mu.Unlock()
	if len(got) != 5 || got[2]["queues"] != nil || got[3]["role"] != "WORKER" || len(got[3]["queues"].([]any)) != 2 || got[3]["queues"].([]any)[0] != "gpu" ||
		got[4]["queues"] == nil || len(got[4]["queues"].([]any)) != 0 || got[0]["ttl"] != "720h" || got[0]["expiresAt"] != nil || got[1]["expiresAt"] != "2030-01-01T00:00:00Z" || got[1]["ttl"] != nil ||
		got[1]["sessions"] == nil || got[2]["sessions"] != nil || got[2]["ttl"] != nil {
		t.Fatalf("create bodies: %v", got)
	}
	if r := f.requests()[0]; r.Header.Get("Yukta-Channel") != "cli" {
		t.Fatalf("create sent channel %q", r.Header.Get("Yukta-Channel"))
	}

	out, _, code = run(t, env, "keys", "list")
	if code != 0 || !strings.Contains(out, "admin") || !strings.Contains(out, "YUKTA_API_KEY") || !strings.Contains(out, "10.0.0.1") || !strings.Contains(out, "never") {
		t.Fatalf("list: exit %d\n%s", code, out)
	}
	out, _, code = run(t, env, "keys", "list", "-o", "jsonl")
	if code != 0 || strings.Count(out, "\n") != 2 {
		t.Fatalf("list -o jsonl: exit %d\n%s", code, out)
	}
	out, _, code = run(t, env, "keys", "rotate", "ci", "-o", "json")
	if code != 0 || !strings.Contains(out, `"secret": "`+secret+`"`) {
		t.Fatalf("rotate -o json: exit %d\n%s", code, out)
	}
	// keys expire: a duration is sent as ttl, a time as expiresAt.
	out, _, code = run(t, env, "keys", "expire", "ci", "10m")
	if reqs := f.requests(); code != 0 || out != "key: ci\naction: expiry set\nexpires: 2026-03-31T12:00:00.000Z\n" || reqs[len(reqs)-1].URL.Path != "/api/keys/ci" {
		t.Fatalf("expire: exit %d %q", code, out)
	}
	run(t, env, "keys", "expire", "ci", "2030-01-01T00:00:00Z")
	mu.Lock()
	got = bodies[len(bodies)-2:]
	mu.Unlock()
	if got[0]["ttl"] != "10m" || got[0]["expiresAt"] != nil || got[1]["expiresAt"] != "2030-01-01T00:00:00Z" || got[1]["ttl"] != nil {
		t.Fatalf("expire bodies: %v", got)
	}
	out, _, code = run(t, env, "keys", "revoke", "ci")
	if reqs := f.requests(); code != 0 || out != "key: ci\naction: revoked\n" || reqs[len(reqs)-1].URL.Path != "/api/keys/ci" {
		t.Fatalf("revoke: exit %d %q", code, out)
	}
}
