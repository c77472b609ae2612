package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// TestKeyRateLimitBoundary: a key may send exactly its limit; the next
// request gets 429 with Retry-After, and another key is not affected.
func TestKeyRateLimitBoundary(t *testing.T) {
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: []string{"YUKTA_API_KEYS=" + writeKeyFile(t), "YUKTA_RATE_LIMIT_KEY=5/h"}})
	e := struct{ s *server }{s}
	for i := 1; i <= 5; i++ {
		if status, b, _ := call(t, e.s, "GET", "/api/sessions", testKeys["viewer"], nil); status != 200 {
			t.Fatalf("request %d of 5: %d %s", i, status, b)
		}
	}
	status, b, h := call(t, e.s, "GET", "/api/sessions", testKeys["viewer"], nil)
	if status != 429 || !strings.Contains(string(b), "key:viewer") {
		t.Fatalf("request 6 of 5: %d %s, want 429 naming the key", status, b)
	}
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 || ra > 3600 {
		t.Fatalf("Retry-After %q", h.Get("Retry-After"))
	}
	checkAnswer(t, "GET", "/api/sessions", status, h, b)
	if status, b, _ := call(t, e.s, "GET", "/api/sessions", testKeys["operator"], nil); status != 200 {
		t.Fatalf("another key was limited too: %d %s", status, b)
	}
	// The metrics saw it all, by route template; /metrics itself needs a key.
	if status, _, _ := call(t, e.s, "GET", "/metrics", "", nil); status != 401 {
		t.Fatalf("/metrics without a key: %d, want 401", status)
	}
	status, b, _ = call(t, e.s, "GET", "/metrics", testKeys["admin"], nil)
	for _, want := range []string{
		`yukta_http_requests_total{method="GET",route="/api/sessions",status="200",surface="rest"} 6`,
		`yukta_http_requests_total{method="GET",route="/api/sessions",status="429",surface="rest"} 1`,
		`yukta_rate_limited_total{scope="key",surface="rest"} 1`,
		`yukta_auth_failures_total{reason="missing",surface="rest"} 1`,
		"yukta_queue_ready ", "yukta_journal_lag_events ",
	} {
		if status != 200 || !strings.Contains(string(b), want) {
			t.Errorf("/metrics (%d) lacks %s", status, want)
		}
	}
	// Every operation answers a spent key the same declared problem.
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/sessions/s/workflows/w/executions", `{}`},
		{"GET", "/api/inputs", ""},
		{"GET", "/api/sessions/s/executions/0193b7a0-0000-7000-8000-000000000000/events", ""},
		{"PUT", "/api/supervisors/x", `{}`},
	} {
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		st, b, h := call(t, e.s, r.method, r.path, testKeys["viewer"], body)
		if st != 429 {
			t.Errorf("%s %s with the spent key: %d %s, want 429", r.method, r.path, st, b)
		}
		checkAnswer(t, r.method, r.path, st, h, b)
	}
}

// TestSourceRateLimitBoundary: the per-source limit counts every request
// from an address, keyed or not, before authentication.
func TestSourceRateLimitBoundary(t *testing.T) {
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: []string{"YUKTA_RATE_LIMIT_SOURCE=7/h"}})
	for i := 1; i <= 7; i++ {
		if status, b, _ := call(t, s, "GET", "/api/plugins", "", nil); status != 200 {
			t.Fatalf("request %d of 7: %d %s", i, status, b)
		}
	}
	status, b, h := call(t, s, "GET", "/api/plugins", "", nil)
	if status != 429 || h.Get("Retry-After") == "" {
		t.Fatalf("request 8 of 7: %d %s (Retry-After %q)", status, b, h.Get("Retry-After"))
	}
	checkAnswer(t, "GET", "/api/plugins", status, h, b)
	// The probes too are limited per source, and say so as declared.
	status, b, h = call(t, s, "GET", "/healthz", "", nil)
	if status != 429 {
		t.Fatalf("/healthz from a spent source: %d %s, want 429", status, b)
	}
	checkAnswer(t, "GET", "/healthz", status, h, b)
}

// TestFailedAuthenticationsAreRateLimited: 20 wrong keys a minute get 401;
// the 21st attempt from that source gets 429, even with a right key new to
// that source (a key that worked from it keeps working), and the log names
// the source but never the keys tried.
func TestFailedAuthenticationsAreRateLimited(t *testing.T) {
	e := newAccessEnv(t)
	for i := 1; i <= 20; i++ {
		status, b, _ := call(t, e.s, "GET", "/api/sessions", "wrong-key-attempt-"+strconv.Itoa(i)+"-padding-padding", nil)
		if status != 401 {
			t.Fatalf("failure %d: %d %s, want 401", i, status, b)
		}
	}
	status, b, h := call(t, e.s, "GET", "/api/sessions", "wrong-key-attempt-21-padding-padding", nil)
	if status != 429 || h.Get("Retry-After") == "" {
		t.Fatalf("failure 21: %d %s, want 429 with Retry-After", status, b)
	}
	if status, _, _ := call(t, e.s, "GET", "/api/sessions", testKeys["viewer"], nil); status != 429 {
		t.Fatalf("a valid key new to a source out of failures: %d, want 429 until the budget refills", status)
	}
	if status, _, _ := call(t, e.s, "GET", "/api/sessions", testKeys["admin"], nil); status != 200 {
		t.Fatalf("a key that worked from a source out of failures: %d, want 200 (issue 11: no lockout)", status)
	}
	logs := e.s.logs.String()
	if strings.Count(logs, `"authentication failed"`) != 20 || !strings.Contains(logs, `"source":"127.0.0.1"`) {
		t.Fatalf("want 20 logged failures naming the source; log:\n%s", logs)
	}
	if strings.Contains(logs, "wrong-key-attempt") {
		t.Fatal("the log holds a presented key")
	}
}

// TestBodyCapBoundary: a body of exactly 1 MiB is read (and judged on its
// content); one byte more is refused with 413 before any handler.
func TestBodyCapBoundary(t *testing.T) {
	e := newAccessEnv(t)
	const limit = 1 << 20
	doc := []byte(`{"name":"big","description":"`)
	tail := []byte(`","workflows":[]}`)
	pad := bytes.Repeat([]byte("a"), limit-len(doc)-len(tail))
	body := append(append(append([]byte{}, doc...), pad...), tail...)
	if len(body) != limit {
		t.Fatalf("body is %d bytes", len(body))
	}
	status, b, _ := call(t, e.s, "PUT", "/api/sessions/big", testKeys["admin"], body)
	if status == 413 {
		t.Fatalf("exactly 1 MiB refused as too large: %s", b)
	}
	before := e.counts()
	status, b, _ = call(t, e.s, "PUT", "/api/sessions/big2", testKeys["admin"], append(body, ' '))
	if status != 413 {
		t.Fatalf("1 MiB + 1: %d %s, want 413", status, b)
	}
	// The same without a declared length (chunked).
	req, err := http.NewRequest(http.MethodPut, e.s.URL+"/api/sessions/big3", io.MultiReader(bytes.NewReader(append(body, ' '))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKeys["admin"])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	chunked, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 413 {
		t.Fatalf("1 MiB + 1 chunked: %d %s, want 413", res.StatusCode, chunked)
	}
	e.assertUnchanged("an oversized body", before)
}

// TestBinaryRefusesOpenNetworkBind runs the real binary: on 0.0.0.0 it
// refuses with only an MCP key and starts with an API key.
func TestBinaryRefusesOpenNetworkBind(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	for _, c := range []struct {
		env    []string
		starts bool
	}{
		{nil, false},
		{[]string{"YUKTA_MCP_API_KEY=mcp-secret-0123456789abcdefgh"}, false},
		{[]string{"YUKTA_API_KEY=api-secret-0123456789abcdefgh"}, true},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, binary(t), "serve", "--addr", "0.0.0.0:0", "--log-format", "json")
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "YUKTA_DATABASE_URL=" + dsn, "YUKTA_DATA_DIR=" + t.TempDir()}, c.env...)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		started := false
		deadline := time.After(20 * time.Second)
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-deadline:
				break wait
			case <-time.After(50 * time.Millisecond):
				if strings.Contains(out.String(), "yukta serving on") {
					started = true
					_ = cmd.Process.Kill()
					<-done
					break wait
				}
			}
		}
		cancel()
		if started != c.starts {
			t.Errorf("env %v on 0.0.0.0: started=%v, want %v; output:\n%s", c.env, started, c.starts, out.String())
		}
		if !c.starts && !strings.Contains(out.String(), "YUKTA_API_KEY") {
			t.Errorf("env %v: the refusal does not name the setting:\n%s", c.env, out.String())
		}
	}
}

// TestMCPBodyCapBoundary (T8): /mcp reads a body of exactly 1 MiB and
// refuses one byte more with 413, with Content-Length or chunked; JSON
// nested 10,000 deep is a 400, and the server lives on.
func TestMCPBodyCapBoundary(t *testing.T) {
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	const limit = 1 << 20
	head := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`)
	tail := []byte(`"}}`)
	body := append(append(append([]byte{}, head...), bytes.Repeat([]byte("a"), limit-len(head)-len(tail))...), tail...)
	mcpPost := func(b []byte, chunked bool) (int, string) {
		t.Helper()
		var r io.Reader = bytes.NewReader(b)
		if chunked {
			r = io.MultiReader(r) // no length known: sent chunked
		}
		req, err := http.NewRequest(http.MethodPost, s.URL+"/mcp", r)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(out)
	}
	for _, chunked := range []bool{false, true} {
		if status, out := mcpPost(body, chunked); status != 200 || !strings.Contains(out, "list_sessions") {
			t.Fatalf("exactly 1 MiB (chunked %v): %d %.200s, want the tool list", chunked, status, out)
		}
		if status, out := mcpPost(append(body[:len(body):len(body)], ' '), chunked); status != 413 {
			t.Fatalf("1 MiB + 1 (chunked %v): %d %.200s, want 413", chunked, status, out)
		}
	}
	deep := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sessions","arguments":{"x":` +
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}}}`)
	if status, out := mcpPost(deep, false); status != 400 && !strings.Contains(out, "error") {
		t.Fatalf("10,000-deep JSON: %d %.200s, want a refusal", status, out)
	}
	if status, _ := mcpPost([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`), false); status != 200 {
		t.Fatalf("the server did not survive: ping %d", status)
	}
}
