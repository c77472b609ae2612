package plugins_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// outboundTypes are the node types that send requests with headers.
var outboundTypes = []string{"HTTP_REQUEST", "WEBHOOK_OUT"}

// TestOutboundRefusesCredentialsInPlainFields checks every rule that keeps
// a credential out of the fields every reader sees: each refusal names the
// field path and the secret form to use, and never repeats the secret.
func TestOutboundRefusesCredentialsInPlainFields(t *testing.T) {
	type tc struct {
		name   string
		config string   // a JSON object's members after "url"
		url    string   // default https://example.com/x
		paths  []string // exact violation paths
		says   []string // every message contains each
		never  []string // no message contains any
	}
	var cases []tc
	for _, h := range []string{"Proxy-Authorization", "Cookie", "Set-Cookie", "X-API-Key", "X-Api-Key", "Api-Key", "x_api_key", "apiKey",
		"X-Auth-Token", "X-Access-Token", "X-Vault-Token", "Token", "X-Client-Secret", "X-Password", "X-Passwd", "X-Auth-Key",
		"Ocp-Apim-Subscription-Key", "X-Amz-Security-Token", "X-Credential", "X-Access-Key", "Private-Key"} {
		cases = append(cases, tc{name: "credential header " + h, config: fmt.Sprintf(`"headers": {%q: "cred-value-1234"}`, h),
			paths: []string{"headers." + h}, says: []string{"looks like a credential", "secretHeaders", h}, never: []string{"cred-value-1234"}})
	}
	for _, q := range []string{"api_key", "apikey", "API-KEY", "key", "token", "access_token", "id_token", "secret", "client_secret", "password",
		"pwd", "sig", "signature", "X-Amz-Signature", "X-Amz-Credential", "auth", "jwt", "private_key"} {
		cases = append(cases, tc{name: "credential query parameter " + q, url: "https://example.com/x?page=2&" + q + "=qv-secret-9876&q=1",
			paths: []string{"url"}, says: []string{"looks like a credential", "secretQuery", fmt.Sprintf("%q", q)}, never: []string{"qv-secret-9876"}})
	}
	cases = append(cases,
		tc{name: "Authorization header points at authorization", config: `"headers": {"authorization": "Bearer cred-value-1234"}`,
			paths: []string{"headers.authorization"}, says: []string{"put the value in authorization"}, never: []string{"cred-value-1234"}},
		tc{name: "Authorization in secretHeaders points at authorization", config: `"secretHeaders": {"Authorization": "Bearer cred-value-1234"}`,
			paths: []string{"secretHeaders.Authorization"}, says: []string{"put the value in authorization"}, never: []string{"cred-value-1234"}},
		tc{name: "a bare credential-looking query part", url: "https://example.com/x?page=2&mytoken-9f8e7d6c",
			paths: []string{"url"}, says: []string{"secretQuery", `without "="`}, never: []string{"9f8e7d6c"}},
		tc{name: "user and password in the url", url: "https://user:hunter2-pass@example.com/x",
			paths: []string{"url"}, says: []string{"user:password@", "authorization", "secretHeaders"}, never: []string{"hunter2"}},
		tc{name: "user only in the url", url: "https://token-user-5678@example.com/x",
			paths: []string{"url"}, says: []string{"user:password@"}, never: []string{"token-user-5678"}},
		tc{name: "password in a url that does not parse", url: "http://user:pw-secret-9876/path@example.com",
			paths: []string{"url"}, says: []string{"is not a valid URL"}, never: []string{"pw-secret-9876"}},
		tc{name: "password in a url with a bad host", url: "http://user:pw-secret-9876@exa mple.com/x",
			paths: []string{"url"}, says: []string{"is not a valid URL"}, never: []string{"pw-secret-9876"}},
		tc{name: "a header in both maps", config: `"headers": {"X-Tenant": "acme"}, "secretHeaders": {"x-tenant": "acme-secret-1"}`,
			paths: []string{"secretHeaders.x-tenant"}, says: []string{"headers.X-Tenant", "once"}, never: []string{"acme-secret-1"}},
		tc{name: "a masked header in both maps", config: `"headers": {"X-Tenant": "acme"}, "secretHeaders": {"X-Tenant": "***"}`,
			paths: []string{"secretHeaders.X-Tenant"}, says: []string{"headers.X-Tenant"}},
		tc{name: "a query parameter in url and secretQuery", url: "https://example.com/x?region=eu", config: `"secretQuery": {"region": "eu-secret-1"}`,
			paths: []string{"secretQuery.region"}, says: []string{"query of url"}, never: []string{"eu-secret-1"}},
		tc{name: "reserved header in secretHeaders", config: `"secretHeaders": {"Idempotency-Key": "k-secret-1"}`,
			paths: []string{"secretHeaders.Idempotency-Key"}, says: []string{"reserved"}, never: []string{"k-secret-1"}},
		tc{name: "secret header value with a line break", config: `"secretHeaders": {"X-API-Key": "k-secret-1\r\nX-B: b"}`,
			paths: []string{"secretHeaders.X-API-Key"}, says: []string{"line breaks"}, never: []string{"k-secret-1"}},
		tc{name: "secret header value not a string", config: `"secretHeaders": {"X-API-Key": 123456789}`,
			paths: []string{"secretHeaders.X-API-Key"}, says: []string{"must be a string"}, never: []string{"123456789"}},
		tc{name: "secret query value not a string", config: `"secretQuery": {"api_key": ["k-secret-1"]}`,
			paths: []string{"secretQuery.api_key"}, says: []string{"must be a string"}, never: []string{"k-secret-1"}},
		tc{name: "invalid secret header name", config: `"secretHeaders": {"X API": "k-secret-1"}`,
			paths: []string{"secretHeaders.X API"}, says: []string{"not a valid header name"}, never: []string{"k-secret-1"}},
		tc{name: "every problem at once", url: "https://u:hunter2-pass@example.com/x?token=t-secret-1", config: `"headers": {"Cookie": "c-secret-1", "X-API-Key": "k-secret-1"}`,
			paths: []string{"url", "url", "headers.Cookie", "headers.X-API-Key"}, never: []string{"hunter2", "t-secret-1", "c-secret-1", "k-secret-1"}},
	)
	for _, typ := range outboundTypes {
		for _, c := range cases {
			t.Run(typ+" "+c.name, func(t *testing.T) {
				u := c.url
				if u == "" {
					u = "https://example.com/x"
				}
				src := fmt.Sprintf(`{"url": %q`, u)
				if c.config != "" {
					src += ", " + c.config
				}
				vs := describe(t, typ).Validate(config(t, src+"}"))
				if !slices.Equal(paths(vs), c.paths) {
					t.Fatalf("violation paths: got %q (%v), want %q", paths(vs), vs, c.paths)
				}
				for _, v := range vs {
					for _, s := range c.says {
						if !strings.Contains(v.Message, s) {
							t.Errorf("%s: message %q does not say %q", v.Path, v.Message, s)
						}
					}
					for _, s := range c.never {
						if strings.Contains(v.Message, s) || strings.Contains(v.Path, s) {
							t.Errorf("%s: message %q repeats the secret %q", v.Path, v.Message, s)
						}
					}
				}
			})
		}
	}
}

func TestOutboundAcceptsCredentialsInSecretFields(t *testing.T) {
	for _, typ := range outboundTypes {
		for _, src := range []string{
			`{"url": "https://example.com/x?q=1&page=2&keyword=go&monkey=1", "headers": {"Accept": "application/json", "X-Request-Id": "r1", "X-Tenant": "acme", "X-Keycloak-Realm": "main", "Content-Type": "text/plain"}}`,
			`{"url": "https://example.com/x", "secretHeaders": {"X-API-Key": "k", "Cookie": "c=1", "Proxy-Authorization": "Basic eA==", "X-Tenant": "acme"}, "secretQuery": {"api_key": "k", "sig": "s"}, "authorization": "Bearer t"}`,
			// Sent back as read: every secret masked.
			`{"url": "https://example.com/x?q=1", "headers": {"X-Tenant": "acme"}, "secretHeaders": {"X-API-Key": "***"}, "secretQuery": {"api_key": "***"}, "authorization": "***"}`,
			`{"url": "https://example.com/x", "secretHeaders": "***", "secretQuery": "***"}`,
			`{"url": "https://example.com/x", "secretHeaders": {}, "secretQuery": {}}`,
		} {
			t.Run(typ+" "+src, func(t *testing.T) {
				if vs := describe(t, typ).Validate(config(t, src)); len(vs) != 0 {
					t.Errorf("Validate: got %v, want no violations", vs)
				}
			})
		}
	}
}

func TestMaskHidesSecretHeadersAndQuery(t *testing.T) {
	for _, typ := range outboundTypes {
		t.Run(typ, func(t *testing.T) {
			d := describe(t, typ)
			c := config(t, `{"url": "https://example.com/x", "headers": {"X-Tenant": "acme"}, "secretHeaders": {"X-API-Key": "k-secret-1", "Cookie": "c-secret-1"}, "secretQuery": {"api_key": "q-secret-1"}, "authorization": "Bearer a-secret-1"}`)
			got := d.Mask(c)
			want := map[string]any{"url": "https://example.com/x", "headers": map[string]any{"X-Tenant": "acme"},
				"secretHeaders": map[string]any{"X-API-Key": plugin.MaskedValue, "Cookie": plugin.MaskedValue},
				"secretQuery":   map[string]any{"api_key": plugin.MaskedValue}, "authorization": plugin.MaskedValue}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Mask: got %#v, want %#v", got, want)
			}
			if c["secretHeaders"].(map[string]any)["X-API-Key"] != "k-secret-1" {
				t.Errorf("Mask changed the stored config: %#v", c)
			}
			if got, want := d.SecretValues(c), []string{"c-secret-1", "k-secret-1", "q-secret-1", "Bearer a-secret-1"}; !slices.Equal(got, want) {
				t.Errorf("SecretValues: got %q, want %q", got, want)
			}
		})
	}
}

// recorder is a loopback server that records every request whole and
// answers with a fixed status, echoing the request's headers and query in
// its body (as debugging endpoints do).
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	got  []*http.Request
	host string
}

func newRecorder(t *testing.T, status int) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, req)
		r.mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprintf(w, "you sent %v with query %s", req.Header, req.URL.RawQuery)
	}))
	t.Cleanup(r.Close)
	u, _ := url.Parse(r.URL)
	r.host = u.Host
	return r
}

func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func TestSecretHeadersAndQueryAreSent(t *testing.T) {
	for _, typ := range outboundTypes {
		t.Run(typ, func(t *testing.T) {
			r := newRecorder(t, 200)
			set := runners(t, plugins.RunnerConfig{EgressOptions: egress.Options{AllowedHosts: []string{r.host}}})
			cfg := fmt.Sprintf(`{"url": "%s/x?page=2", "headers": {"X-Tenant": "acme"}, "secretHeaders": {"X-API-Key": "k-secret-1", "Cookie": "c=secret 2"}, "secretQuery": {"api_key": "q secret/3+"}}`, r.URL)
			if typ == "HTTP_REQUEST" {
				cfg = strings.Replace(cfg, `{"url"`, `{"method": "POST", "url"`, 1)
			}
			if _, err := run(t, set, invocation(t, typ, cfg, `{"n": 1}`, nil)); err != nil {
				t.Fatalf("Run: %v", err)
			}
			reqs := r.requests()
			if len(reqs) != 1 {
				t.Fatalf("requests: got %d, want 1", len(reqs))
			}
			h, q := reqs[0].Header, reqs[0].URL.Query()
			for name, want := range map[string]string{"X-Tenant": "acme", "X-API-Key": "k-secret-1", "Cookie": "c=secret 2", "Idempotency-Key": "ex-1:n1:7"} {
				if got := h.Get(name); got != want {
					t.Errorf("header %s: got %q, want %q", name, got, want)
				}
			}
			if q.Get("page") != "2" || q.Get("api_key") != "q secret/3+" || !strings.HasPrefix(reqs[0].URL.RawQuery, "page=2&") {
				t.Errorf("query: got %q, want page=2 then api_key", reqs[0].URL.RawQuery)
			}
		})
	}
}

func TestOutboundErrorsHideSecretValues(t *testing.T) {
	secrets := []string{"k-secret-1", "c-secret-2", "q-secret/3", url.QueryEscape("q-secret/3"), "a-secret-4"}
	cfgFor := func(u string) string {
		return fmt.Sprintf(`{"url": "%s/x", "secretHeaders": {"X-API-Key": "k-secret-1", "Cookie": "c-secret-2"}, "secretQuery": {"api_key": "q-secret/3"}, "authorization": "Bearer a-secret-4"}`, u)
	}
	t.Run("WEBHOOK_OUT quotes an echoing answer", func(t *testing.T) {
		r := newRecorder(t, 500)
		set := runners(t, plugins.RunnerConfig{EgressOptions: egress.Options{AllowedHosts: []string{r.host}}})
		_, err := run(t, set, invocation(t, "WEBHOOK_OUT", cfgFor(r.URL), `{}`, nil))
		if err == nil || !strings.Contains(err.Error(), "answered 500") || !strings.Contains(err.Error(), "you sent") {
			t.Fatalf("Run: got %v, want the answer quoted", err)
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("Run error %q repeats the secret %q", err, s)
			}
		}
	})
	for _, typ := range outboundTypes {
		t.Run(typ+" refused by egress", func(t *testing.T) {
			r := newRecorder(t, 200)
			_, err := run(t, runners(t, plugins.RunnerConfig{}), invocation(t, typ, cfgFor(r.URL), `{}`, nil))
			if err == nil {
				t.Fatal("Run: got nil, want a refusal")
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("Run error %q repeats the secret %q", err, s)
				}
			}
		})
	}
}

// TestSessionRoundTripKeepsSecrets reads a session with the real built-ins
// the way every read path does (masked), sends the read document back
// unchanged, and checks that it passes and keeps every stored secret:
// WEBHOOK's secret (whose length check must not run on "***"),
// authorization, and each secretHeaders and secretQuery value.
func TestSessionRoundTripKeepsSecrets(t *testing.T) {
	reg := registry(t)
	doc := `{"sessionId": "s", "name": "s", "workflows": [{"workflowId": "w", "nodes": [
		{"nodeId": "hook", "type": "WEBHOOK", "config": {"secret": "0123456789abcdef-hook"}},
		{"nodeId": "call", "type": "HTTP_REQUEST", "config": {"url": "https://example.com/x?page=1", "headers": {"X-Tenant": "acme"},
			"secretHeaders": {"X-API-Key": "k-secret-1", "Cookie": "c-secret-2"}, "secretQuery": {"api_key": "q-secret-3"}, "authorization": "Bearer a-secret-4"}},
		{"nodeId": "out", "type": "WEBHOOK_OUT", "config": {"url": "https://example.com/hook", "secretHeaders": {"X-Hook-Token": "h-secret-5"}}}],
		"edges": [{"source": "hook", "target": "call"}, {"source": "call", "target": "out"}]}]}`
	stored, _, err := session.Parse([]byte(doc), reg, session.ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	read := encodeSession(t, stored.Masked(reg))
	for _, s := range []string{"0123456789abcdef-hook", "secret-1", "secret-2", "secret-3", "secret-4", "secret-5"} {
		if strings.Contains(read, s) {
			t.Fatalf("the read document holds %q: %s", s, read)
		}
	}
	for _, s := range []string{`"X-API-Key":"***"`, `"api_key":"***"`, `"X-Hook-Token":"***"`, `"X-Tenant":"acme"`, `"secret":"***"`} {
		if !strings.Contains(read, s) {
			t.Errorf("the read document lacks %s: %s", s, read)
		}
	}
	back, _, err := session.Parse([]byte(read), reg, session.ParseOptions{})
	if err != nil {
		t.Fatalf("Parse of the read document: %v", err)
	}
	kept, vs := back.KeepSecrets(&stored, reg)
	if len(vs) != 0 {
		t.Fatalf("KeepSecrets: got %v, want none", vs)
	}
	if got, want := encodeSession(t, kept), encodeSession(t, stored); got != want {
		t.Errorf("kept session:\n got %s\nwant %s", got, want)
	}

	// A new secret header sent as "***" has nothing to keep.
	added := strings.Replace(read, `"X-API-Key":"***"`, `"X-API-Key":"***","X-New-Key":"***"`, 1)
	next, _, err := session.Parse([]byte(added), reg, session.ParseOptions{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	_, vs = next.KeepSecrets(&stored, reg)
	if got, want := paths(vs), []string{"workflows[0].nodes[1].config.secretHeaders.X-New-Key"}; !slices.Equal(got, want) {
		t.Fatalf("KeepSecrets of a new masked header: got %q (%v), want %q", got, vs, want)
	}
	if !strings.Contains(vs[0].Message, `secret field "secretHeaders" member "X-New-Key"`) || !strings.Contains(vs[0].Message, "send the real value") {
		t.Errorf("message: got %q", vs[0].Message)
	}
}

// encodeSession writes s as a session document, the way the read paths do.
func encodeSession(t *testing.T, s session.Session) string {
	t.Helper()
	var wfs []json.RawMessage
	for _, w := range s.Workflows() {
		def, err := session.MarshalDefinition(w)
		if err != nil {
			t.Fatal(err)
		}
		head, _ := json.Marshal(w.ID())
		wfs = append(wfs, json.RawMessage(`{"workflowId":`+string(head)+`,`+string(def[1:])))
	}
	b, err := json.Marshal(map[string]any{"sessionId": s.ID(), "name": s.Name(), "workflows": wfs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
