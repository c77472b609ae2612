package plugins_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/application/executionapp"
)

// seen is one request as the test server received it.
type seen struct {
	method, path, contentType, auth, key, agent, custom string
	body                                                string
}

// endpoint is a real HTTP server on 127.0.0.1 that records requests and
// answers with status and body.
type endpoint struct {
	*httptest.Server
	mu   sync.Mutex
	got  []seen
	host string
}

func newEndpoint(t *testing.T, status int, contentType, body string) *endpoint {
	t.Helper()
	e := &endpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.got = append(e.got, seen{
			method: r.Method, path: r.URL.RequestURI(), contentType: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization"),
			key: r.Header.Get("Idempotency-Key"), agent: r.Header.Get("User-Agent"), custom: r.Header.Get("X-Source"), body: string(b),
		})
		e.mu.Unlock()
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.Header().Set("X-Trace", "t-1")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(e.Close)
	u, _ := url.Parse(e.URL)
	e.host = u.Host
	return e
}

func (e *endpoint) requests() []seen {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]seen(nil), e.got...)
}

// allowing returns runners whose egress client allows only e.
func allowing(t *testing.T, e *endpoint) *plugins.RunnerSet {
	t.Helper()
	return runners(t, plugins.RunnerConfig{EgressOptions: egress.Options{AllowedHosts: []string{e.host}}})
}

func run(t *testing.T, set *plugins.RunnerSet, in executionapp.Invocation) (executionapp.Outcome, error) {
	t.Helper()
	r, ok := set.Runner(in.NodeType)
	if !ok {
		t.Fatalf("Runner(%s): not found", in.NodeType)
	}
	return r.Run(context.Background(), in)
}

func TestHTTPRequestRunner(t *testing.T) {
	tests := []struct {
		name              string
		status            int
		contentType, body string
		config, payload   string
		wantPort          string
		wantAnswer        string // body of the emitted answer, as JSON
		wantSent          seen
	}{
		{
			name: "POST sends the payload, 2xx JSON answer on default", status: 201, contentType: "application/json", body: `{"id": 12345678901234567890, "ok": true}`,
			config: `{"url": "%s/orders?x=1", "method": "POST", "headers": {"X-Source": "yukta-test"}, "authorization": "Bearer s3cret-token"}`, payload: `{"sku": "A-1", "n": 2}`,
			wantPort: "default", wantAnswer: `{"id": 12345678901234567890, "ok": true}`,
			wantSent: seen{method: "POST", path: "/orders?x=1", contentType: "application/json", auth: "Bearer s3cret-token", key: "ex-1:n1:7", agent: "yukta", custom: "yukta-test", body: `{"n":2,"sku":"A-1"}`},
		},
		{
			name: "configured body wins over the payload", status: 200, contentType: "text/plain", body: "done",
			config: `{"url": "%s/x", "method": "PUT", "body": {"fixed": true}}`, payload: `{"sku": "A-1"}`,
			wantPort: "default", wantAnswer: `"done"`,
			wantSent: seen{method: "PUT", path: "/x", contentType: "application/json", key: "ex-1:n1:7", agent: "yukta", body: `{"fixed":true}`},
		},
		{
			name: "GET sends no body", status: 200, contentType: "application/problem+json", body: `[1]`,
			config: `{"url": "%s/items"}`, payload: `{"sku": "A-1"}`,
			wantPort: "default", wantAnswer: `[1]`,
			wantSent: seen{method: "GET", path: "/items", key: "ex-1:n1:7", agent: "yukta"},
		},
		{
			name: "500 goes to the error port", status: 500, contentType: "application/json", body: `{"error": "boom"}`,
			config: `{"url": "%s/fail", "method": "DELETE"}`, payload: `{}`,
			wantPort: "error", wantAnswer: `{"error": "boom"}`,
			wantSent: seen{method: "DELETE", path: "/fail", key: "ex-1:n1:7", agent: "yukta"},
		},
		{
			name: "invalid JSON is passed on as text", status: 200, contentType: "application/json", body: `{not json`,
			config: `{"url": "%s/bad"}`, payload: `{}`,
			wantPort: "default", wantAnswer: `"{not json"`,
			wantSent: seen{method: "GET", path: "/bad", key: "ex-1:n1:7", agent: "yukta"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEndpoint(t, tt.status, tt.contentType, tt.body)
			cfg := strings.Replace(tt.config, "%s", e.URL, 1)
			out, err := run(t, allowing(t, e), invocation(t, "HTTP_REQUEST", cfg, tt.payload, nil))
			if err != nil {
				t.Fatalf("Run: got error %v, want an answer", err)
			}
			if len(out.Emits) != 1 || out.Emits[0].Port != tt.wantPort {
				t.Fatalf("Run: got emits %+v, want one on %q", out.Emits, tt.wantPort)
			}
			answer := out.Emits[0].Payload.(map[string]any)
			if answer["status"] != float64(tt.status) {
				t.Errorf("answer status: got %#v, want %d", answer["status"], tt.status)
			}
			if h := answer["headers"].(map[string]any); h["x-trace"] != "t-1" {
				t.Errorf("answer headers: got %v, want x-trace: t-1 under a lower-case key", h)
			}
			got, _ := json.Marshal(answer["body"])
			if want := jsonValue(t, tt.wantAnswer); string(got) != mustJSON(t, want) {
				t.Errorf("answer body: got %s, want %s", got, tt.wantAnswer)
			}
			reqs := e.requests()
			if len(reqs) != 1 {
				t.Fatalf("requests received: got %d, want 1", len(reqs))
			}
			if tt.wantSent.body != "" {
				reqs[0].body = mustJSON(t, jsonValue(t, reqs[0].body)) // key order
			}
			if reqs[0] != tt.wantSent {
				t.Errorf("request received: got %+v, want %+v", reqs[0], tt.wantSent)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHTTPRequestRefusedWhenNotAllowListed(t *testing.T) {
	e := newEndpoint(t, 200, "", "ok")
	set := runners(t, plugins.RunnerConfig{})
	_, err := run(t, set, invocation(t, "HTTP_REQUEST", `{"url": "`+e.URL+`/x?key=k", "authorization": "Bearer s3cret-token"}`, `{}`, nil))
	if err == nil || !strings.Contains(err.Error(), "refused to connect to "+e.host) || !strings.Contains(err.Error(), "YUKTA_EGRESS_ALLOWED_HOSTS") {
		t.Fatalf("Run: got %v, want a refusal naming %s and the setting", err, e.host)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Run error: got %q, want no authorization value in it", err)
	}
	if n := len(e.requests()); n != 0 {
		t.Errorf("requests received: got %d, want 0", n)
	}
}

func TestHTTPRequestBodyCap(t *testing.T) {
	e := newEndpoint(t, 200, "text/plain", strings.Repeat("x", 11))
	_, err := run(t, allowing(t, e), invocation(t, "HTTP_REQUEST", `{"url": "`+e.URL+`", "maxResponseBytes": 10}`, `{}`, nil))
	if err == nil || !strings.Contains(err.Error(), "limit of 10 bytes") {
		t.Errorf("Run: got %v, want the node's cap of 10 bytes to fail the attempt", err)
	}
}

func TestWebhookOutRunner(t *testing.T) {
	e := newEndpoint(t, 204, "", "")
	out, err := run(t, allowing(t, e), invocation(t, "WEBHOOK_OUT", `{"url": "`+e.URL+`/hook", "headers": {"X-Source": "yukta"}, "authorization": "Bearer s3cret-token"}`, `{"done": true}`, nil))
	if err != nil {
		t.Fatalf("Run: got error %v, want nil", err)
	}
	if len(out.Emits) != 0 || out.HasResult {
		t.Errorf("Run: got %+v, want an empty outcome from a terminal", out)
	}
	want := seen{method: "POST", path: "/hook", contentType: "application/json", auth: "Bearer s3cret-token", key: "ex-1:n1:7", agent: "yukta", custom: "yukta", body: `{"done":true}`}
	if reqs := e.requests(); len(reqs) != 1 || reqs[0] != want {
		t.Errorf("requests received: got %+v, want [%+v]", reqs, want)
	}
}

func TestWebhookOutFailsOnNon2xx(t *testing.T) {
	// The endpoint echoes the credential back, as debugging endpoints do.
	e := newEndpoint(t, 503, "text/plain", "unavailable; you sent Bearer s3cret-token")
	_, err := run(t, allowing(t, e), invocation(t, "WEBHOOK_OUT", `{"url": "`+e.URL+`/hook", "authorization": "Bearer s3cret-token"}`, `{}`, nil))
	if err == nil || !strings.Contains(err.Error(), "answered 503 Service Unavailable") {
		t.Fatalf("Run: got %v, want an error naming the status", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Run error: got %q, want the authorization value masked", err)
	}
}

func TestWebhookOutRefusedWhenNotAllowListed(t *testing.T) {
	e := newEndpoint(t, 200, "", "")
	_, err := run(t, runners(t, plugins.RunnerConfig{}), invocation(t, "WEBHOOK_OUT", `{"url": "`+e.URL+`"}`, `{}`, nil))
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("Run: got %v, want a refusal", err)
	}
}
