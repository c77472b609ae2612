package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// sentRequest is what a loopback target received.
type sentRequest struct {
	path, query string
	header      http.Header
}

// target is a loopback HTTP server that records every request and answers
// 200 (or status for a path that has one).
type target struct {
	*httptest.Server
	mu     sync.Mutex
	got    []sentRequest
	status map[string]int
}

func newTarget(t *testing.T, status map[string]int) *target {
	t.Helper()
	tg := &target{status: status}
	tg.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tg.mu.Lock()
		tg.got = append(tg.got, sentRequest{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone()})
		tg.mu.Unlock()
		code := http.StatusOK
		if c, ok := tg.status[r.URL.Path]; ok {
			code = c
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) host() string { return strings.TrimPrefix(tg.URL, "http://") }

// wait returns the first n requests to path, failing after waitLimit.
func (tg *target) wait(t *testing.T, path string, n int) []sentRequest {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		tg.mu.Lock()
		var out []sentRequest
		for _, r := range tg.got {
			if r.path == path {
				out = append(out, r)
			}
		}
		tg.mu.Unlock()
		if len(out) >= n {
			return out[:n]
		}
		if time.Now().After(deadline) {
			t.Fatalf("target: %d requests to %s after %s, want %d", len(out), path, waitLimit, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionsSecretRoundTrip applies a session with every kind of secret
// (WEBHOOK secret, authorization, secretHeaders, secretQuery), reads it
// with a VIEWER key through REST and MCP (all masked), sends the REST read
// back unchanged (200), and checks that the nodes still send the real
// values and a webhook signed with the real secret still starts a run. Plain
// fields that carry credentials are refused with the path and the secret
// form, and a refusal never repeats the password or the value.
func TestSessionsSecretRoundTrip(t *testing.T) {
	t.Parallel()
	tg := newTarget(t, nil)
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: []string{"YUKTA_API_KEYS=" + writeKeyFile(t),
		"YUKTA_EGRESS_ALLOWED_HOSTS=" + tg.host()}})
	admin, viewer := testKeys["admin"], testKeys["viewer"]
	const (
		hookSecret = "hook-secret-0123456789abcdef"
		apiKey     = "api-key-secret-7f3a9c"
		cookie     = "sid=cookie-secret-51c2"
		queryKey   = "query-secret-9d8e/+x"
		auth       = "Bearer auth-secret-4b6d"
		hookToken  = "hook-token-secret-2a1f"
	)
	secrets := []string{hookSecret, apiKey, "cookie-secret-51c2", "query-secret-9d8e", "auth-secret-4b6d", hookToken}
	doc := fmt.Sprintf(`{"name":"round trip","workflows":[
		{"workflowId":"w","nodes":[{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"call","type":"HTTP_REQUEST","config":{"url":"%[1]s/call?page=1","method":"POST","headers":{"X-Tenant":"acme"},
				"secretHeaders":{"X-API-Key":%[2]q,"Cookie":%[3]q},"secretQuery":{"api_key":%[4]q},"authorization":%[5]q}},
			{"nodeId":"out","type":"WEBHOOK_OUT","config":{"url":"%[1]s/hook","secretHeaders":{"X-Hook-Token":%[6]q}}}],
		 "edges":[{"source":"start","target":"call"},{"source":"call","target":"out"}]},
		{"workflowId":"hooked","nodes":[{"nodeId":"hook","type":"WEBHOOK","config":{"secret":%[7]q}},{"nodeId":"done","type":"RESULT"}],
		 "edges":[{"source":"hook","target":"done"}]}]}`, tg.URL, apiKey, cookie, queryKey, auth, hookToken, hookSecret)
	if status, b, _ := call(t, s, "PUT", "/api/sessions/rt", admin, []byte(doc)); status != http.StatusCreated {
		t.Fatalf("apply: %d %s", status, b)
	}

	status, read, _ := call(t, s, "GET", "/api/sessions/rt", viewer, nil)
	if status != http.StatusOK {
		t.Fatalf("GET session as VIEWER: %d %s", status, read)
	}
	_, wf, _ := call(t, s, "GET", "/api/sessions/rt/workflows/w", viewer, nil)
	cs := mustConnect(t, s.URL, viewer)
	var mcpRead strings.Builder
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_session_details", map[string]any{"sessionId": "rt"}},
		{"get_workflow_details", map[string]any{"sessionId": "rt", "workflowId": "w"}},
	} {
		res := mcpCall(t, cs, c.tool, c.args, nil)
		if res.IsError {
			t.Fatalf("%s: %s", c.tool, text(res))
		}
		b, _ := json.Marshal(res)
		mcpRead.Write(b)
	}
	for name, body := range map[string]string{"REST session": string(read), "REST workflow": string(wf), "MCP": mcpRead.String()} {
		for _, sec := range secrets {
			if strings.Contains(body, sec) {
				t.Errorf("%s read shows the secret %q", name, sec)
			}
		}
		for _, want := range []string{`"X-API-Key":"***"`, `"api_key":"***"`, `"X-Hook-Token":"***"`, `"X-Tenant":"acme"`} {
			if !strings.Contains(strings.ReplaceAll(body, `\"`, `"`), want) {
				t.Errorf("%s read lacks %s: %s", name, want, body)
			}
		}
	}

	// The read, sent back unchanged, is accepted and keeps every secret.
	if status, b, _ := call(t, s, "PUT", "/api/sessions/rt", admin, read); status != http.StatusOK {
		t.Fatalf("PUT of the GET's body: %d %s, want 200", status, b)
	}
	if _, again, _ := call(t, s, "GET", "/api/sessions/rt", viewer, nil); string(again) != string(read) {
		t.Errorf("the session changed on the round trip:\n got %s\nwant %s", again, read)
	}
	if status, b, _ := call(t, s, "POST", "/api/sessions/rt/workflows/w/executions", admin, []byte(`{"payload":{"n":1}}`)); status != http.StatusCreated {
		t.Fatalf("start: %d %s", status, b)
	}
	c := tg.wait(t, "/call", 1)[0]
	for name, want := range map[string]string{"X-API-Key": apiKey, "Cookie": cookie, "Authorization": auth, "X-Tenant": "acme"} {
		if got := c.header.Get(name); got != want {
			t.Errorf("HTTP_REQUEST sent %s %q, want %q", name, got, want)
		}
	}
	if want := "page=1&api_key=query-secret-9d8e%2F%2Bx"; c.query != want {
		t.Errorf("HTTP_REQUEST sent query %q, want %q", c.query, want)
	}
	if got := tg.wait(t, "/hook", 1)[0].header.Get("X-Hook-Token"); got != hookToken {
		t.Errorf("WEBHOOK_OUT sent X-Hook-Token %q, want %q", got, hookToken)
	}
	// WEBHOOK's secret (whose length check must not run on "***") is still
	// the real one: a delivery signed with it starts a run, and storage
	// holds it.
	body := []byte(`{"n":2}`)
	if status, b, _ := call(t, s, "POST", "/api/hooks/rt/hooked", admin, body, signWebhook(hookSecret, body)...); status != http.StatusCreated {
		t.Errorf("a webhook signed with the real secret after the round trip: %d %s, want 201", status, b)
	}
	db, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var stored string
	if err := db.QueryRow(context.Background(), `SELECT definition #>> '{nodes,0,config,secret}' FROM workflows
		WHERE session_id = 'rt' AND workflow_id = 'hooked'`).Scan(&stored); err != nil || stored != hookSecret {
		t.Errorf("stored WEBHOOK secret after the round trip: %v, equal to the real one: %v", err, stored == hookSecret)
	}

	// Refusals: each names the path and the secret form, and repeats no secret.
	refuse := func(name, from, to, path string, says []string, never ...string) {
		t.Helper()
		bad := strings.Replace(string(read), from, to, 1)
		if bad == string(read) {
			t.Fatalf("%s: %q is not in the read document", name, from)
		}
		status, b, _ := call(t, s, "PUT", "/api/sessions/rt", admin, []byte(bad))
		var p struct {
			Errors []struct{ Path, Message string }
		}
		_ = json.Unmarshal(b, &p)
		if status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Path != path {
			t.Errorf("%s: %d %s, want 400 with one error at %s", name, status, b, path)
			return
		}
		for _, s := range says {
			if !strings.Contains(p.Errors[0].Message, s) {
				t.Errorf("%s: message %q does not say %q", name, p.Errors[0].Message, s)
			}
		}
		for _, n := range never {
			if strings.Contains(string(b), n) {
				t.Errorf("%s: the answer repeats %q: %s", name, n, b)
			}
		}
	}
	refuse("a credential header in headers", `"X-Tenant":"acme"`, `"X-Tenant":"acme","X-Auth-Token":"plain-key-6c5b4a"`,
		"workflows[0].nodes[1].config.headers.X-Auth-Token", []string{"secretHeaders", "looks like a credential"}, "plain-key-6c5b4a")
	refuse("a password in the url", tg.URL+"/call", strings.Replace(tg.URL, "http://", "http://user:url-pass-8e7d6c@", 1)+"/call",
		"workflows[0].nodes[1].config.url", []string{"user:password@", "authorization", "secretHeaders"}, "url-pass-8e7d6c")
	refuse("a key in the url's query", "/call?page=1", "/call?page=1&access_token=url-key-3f2e1d",
		"workflows[0].nodes[1].config.url", []string{"secretQuery", `"access_token"`}, "url-key-3f2e1d")
	refuse("a new masked secret header", `"X-API-Key":"***"`, `"X-API-Key":"***","X-Other-Key":"***"`,
		"workflows[0].nodes[1].config.secretHeaders.X-Other-Key", []string{"no stored value to keep"})
	if _, after, _ := call(t, s, "GET", "/api/sessions/rt", viewer, nil); string(after) != string(read) {
		t.Errorf("a refused apply changed the session:\n got %s\nwant %s", after, read)
	}
	for _, n := range append(secrets, "plain-key-6c5b4a", "url-pass-8e7d6c", "url-key-3f2e1d") {
		if strings.Contains(s.logs.String(), n) {
			t.Errorf("the server log holds %q", n)
		}
	}
}
