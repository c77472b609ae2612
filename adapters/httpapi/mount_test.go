package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/domain/access"
)

// TestMountIsGatedAndAuthenticated: a mount gets the Host/Origin gate, the
// key of its surface, the principal on the request context and its own body
// cap, and no spec validation.
func TestMountIsGatedAndAuthenticated(t *testing.T) {
	const mcpSecret = "mcp-secret-0123456789abcdefgh"
	spec, err := access.NewKeySpec("mcp", access.Admin, nil, mcpSecret)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := access.NewKeyring([]access.KeySpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	echoActor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		_, _ = io.WriteString(w, authn.PrincipalFrom(r.Context()).Actor()+" "+r.Method+" "+string(body))
	})
	srv, err := New(Config{Addr: "127.0.0.1:0", Security: Security{Keys: authn.Keys{MCP: ring}},
		Mounts: []Mount{{Paths: []string{"/mcp", "/sse"}, Handler: echoActor, Surface: authn.MCP, BodyLimit: 16}}}, UseCases{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string, header ...string) (int, string) {
		req := httptest.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if code, body := do("POST", "/mcp", "{}", "Authorization", "Bearer "+mcpSecret); code != 200 || body != "key:mcp POST {}" {
		t.Fatalf("keyed call: %d %q", code, body)
	}
	if code, body := do("GET", "/sse", "", "X-API-Key", mcpSecret); code != 200 || body != "key:mcp GET " {
		t.Fatalf("the alias: %d %q", code, body)
	}
	before := calls
	if code, _ := do("POST", "/mcp", "{}"); code != 401 {
		t.Fatalf("no key on MCP: %d", code)
	}
	if code, _ := do("POST", "/mcp", "{}", "Authorization", "Bearer "+mcpSecret, "Origin", "http://evil.example"); code != 403 {
		t.Fatalf("cross-origin: %d", code)
	}
	if code, _ := do("POST", "/mcp", strings.Repeat("x", 17), "Authorization", "Bearer "+mcpSecret); code != 413 {
		t.Fatalf("17 bytes over a 16-byte cap: %d", code)
	}
	if calls != before {
		t.Fatalf("the handler ran for %d refused requests", calls-before)
	}
	// The MCP key alone leaves REST open (the bind guard keeps such a
	// server on loopback), and does not open REST as a key either.
	if code, body := do("GET", "/healthz", ""); code != 200 {
		t.Fatalf("healthz: %d %s", code, body)
	}
	if code, body := do("GET", "/api/openapi.yaml", "", "X-API-Key", "wrong-key-0123456789abcdefghij"); code != 200 {
		t.Fatalf("public route with a wrong key: %d %s", code, body)
	}
}

// TestOpenRequestsEndWhenTheirKeyGoes: an MCP call still waiting when its
// key is removed is answered 401 saying why (not 499, not 500), and a
// response already streaming is cut; the agent surface is not held.
func TestOpenRequestsEndWhenTheirKeyGoes(t *testing.T) {
	const secret = "api-secret-0123456789abcdefgh"
	spec, err := access.NewKeySpec("ci", access.Admin, nil, secret)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := access.NewKeyring([]access.KeySpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	ring := authn.NewRing(kr)
	waiting := make(chan struct{}, 2)
	wait := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/sse" { // a stream: answered, then open
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: hello\n\n")
			w.(http.Flusher).Flush()
		}
		waiting <- struct{}{}
		<-r.Context().Done()
	})
	core, logs := observer.New(zap.InfoLevel)
	srv, err := New(Config{Addr: "127.0.0.1:0", Security: Security{Keys: authn.Keys{API: ring}},
		Mounts: []Mount{{Paths: []string{"/mcp", "/sse"}, Handler: wait, Surface: authn.MCP}}}, UseCases{}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	type answer struct {
		code int
		body string
	}
	send := func(method, path string) chan answer {
		out := make(chan answer, 1)
		go func() {
			req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader("{}"))
			req.Host = "127.0.0.1"
			req.Header.Set("Authorization", "Bearer "+secret)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- answer{-1, err.Error()}
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			out <- answer{res.StatusCode, string(b)}
		}()
		return out
	}
	call, stream := send("POST", "/mcp"), send("GET", "/sse")
	<-waiting
	<-waiting
	other, err := access.NewKeySpec("cd", access.Admin, nil, "cd-secret-0123456789abcdefghij")
	if err != nil {
		t.Fatal(err)
	}
	kr, err = access.NewKeyring([]access.KeySpec{other})
	if err != nil {
		t.Fatal(err)
	}
	ring.Replace(kr)
	for range 2 {
		select {
		case a := <-call:
			if a.code != http.StatusUnauthorized || !strings.Contains(a.body, "no longer valid") || !strings.Contains(a.body, typeUnauthenticated) {
				t.Fatalf("the waiting call: %d %s", a.code, a.body)
			}
			call = nil
		case a := <-stream:
			if a.code != http.StatusOK || a.body != "event: hello\n\n" {
				t.Fatalf("the stream: %d %q", a.code, a.body)
			}
			stream = nil
		case <-time.After(20 * authn.Recheck):
			t.Fatalf("still open %s after the key was removed", 20*authn.Recheck)
		}
	}
	if n := logs.FilterMessage("request ended: the key that opened it is no longer valid").Len(); n != 2 {
		t.Fatalf("%d requests logged as ended by their key, want 2", n)
	}
	if n := logs.FilterField(zap.Int("status", StatusClientClosed)).Len(); n != 0 {
		t.Fatalf("%d requests logged as 499", n)
	}
}
