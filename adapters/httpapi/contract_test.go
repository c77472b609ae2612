package httpapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/api"
	"github.com/yukta/yukta/domain/access"
)

// TestEveryOperationDeclaresItsRefusals walks the REST contract: every
// operation can be refused by the Host/Origin gate (403) and the source rate
// limit (429), and every one that needs a key or a credential can answer 401.
// Each must say so, as a problem, so an operation added later without them
// fails here rather than surprising a generated client.
func TestEveryOperationDeclaresItsRefusals(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			n++
			public := op.Security != nil && len(*op.Security) == 0
			if public != publicOps[op.OperationID] {
				t.Errorf("%s %s (%s): security: [] is %v in the spec but publicOps says %v", method, path, op.OperationID, public, publicOps[op.OperationID])
			}
			want := []string{"403", "429"}
			if !public {
				want = append(want, "401")
			}
			for _, code := range want {
				r := op.Responses.Value(code)
				if r == nil || r.Value == nil {
					t.Errorf("%s %s (%s) does not declare %s; add `%q: { $ref: \"#/components/responses/%s\" }`",
						method, path, op.OperationID, code, code, map[string]string{"401": "Unauthorized", "403": "Forbidden", "429": "TooManyRequests"}[code])
					continue
				}
				mt := r.Value.Content.Get("application/problem+json")
				if mt == nil || mt.Schema == nil || !strings.HasSuffix(mt.Schema.Ref, "/Problem") {
					t.Errorf("%s %s (%s): %s is not an application/problem+json Problem", method, path, op.OperationID, code)
				}
				if code == "429" && r.Value.Headers["Retry-After"] == nil {
					t.Errorf("%s %s (%s): 429 does not declare its Retry-After header", method, path, op.OperationID)
				}
			}
		}
	}
	if n < 60 {
		t.Fatalf("only %d operations walked", n)
	}
}

// TestServersDoNotNarrowRouting: the spec's servers name real URLs for
// clients, but the request validator must route a request whatever Host it
// came under (the Host gate decides which are ours), and the served document
// keeps its servers.
func TestServersDoNotNarrowRouting(t *testing.T) {
	spec, err := restapi.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Servers) < 2 || spec.Servers[0].URL != "http://127.0.0.1:8080" {
		t.Fatalf("servers %v, want the default local server first", spec.Servers)
	}
	srv, err := New(Config{AllowedHosts: []string{"yukta.example.com"}}, UseCases{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.1:8080", "localhost:9999", "yukta.example.com", "yukta.example.com:8443", "[::1]:1"} {
		// limit=0 is refused by the validator only once the route matched:
		// a route the servers block hid would be 404.
		code, body := hit(srv.Handler(), http.MethodGet, "/api/sessions?limit=0", host, "")
		if code != http.StatusBadRequest || !strings.Contains(body, "query.limit") {
			t.Errorf("Host %s: %d %s; want 400 naming query.limit", host, code, body)
		}
	}
	if !slices.ContainsFunc(strings.Split(string(api.Spec), "\n"), func(l string) bool { return strings.Contains(l, "url: http://127.0.0.1:8080") }) {
		t.Error("the served document lost its servers")
	}
}

// TestMethodNotAllowedSaysWhatIs: a method a path does not have is 405 with
// Allow listing the path's methods (HEAD too: no route serves it), OPTIONS
// is 204 with the same Allow, and the gates keep their order: a foreign
// Host is 403 first, then a missing key 401 (except on the public probes),
// then 405.
func TestMethodNotAllowedSaysWhatIs(t *testing.T) {
	const secret = "admin-secret-0123456789abcdefgh"
	spec, err := access.NewKeySpec("admin", access.Admin, nil, secret)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := access.NewKeyring([]access.KeySpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	open, err := New(Config{}, UseCases{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := New(Config{Security: Security{Keys: authn.Keys{API: authn.NewRing(ring)}}}, UseCases{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	send := func(srv *Server, method, path, host, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://127.0.0.1:8080"+path, nil)
		if host != "" {
			req.Host = host
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	for _, c := range []struct {
		method, path, allow string
	}{
		{"DELETE", "/api/plugins", "OPTIONS, GET"},
		{"PATCH", "/api/sessions/s1", "OPTIONS, DELETE, GET, PUT"},
		{"HEAD", "/api/sessions", "OPTIONS, GET"},
		{"POST", "/healthz", "OPTIONS, GET"},
		{"GET", "/api/sessions/s1/executions/0193b7a0-0000-7000-8000-000000000000/control", "OPTIONS, POST"},
	} {
		for _, mode := range []struct {
			name string
			srv  *Server
			key  string
		}{{"open", open, ""}, {"keyed", keyed, secret}} {
			rec := send(mode.srv, c.method, c.path, "", mode.key)
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != c.allow {
				t.Errorf("%s: %s %s: %d Allow %q, want 405 Allow %q: %s", mode.name, c.method, c.path, rec.Code, rec.Header().Get("Allow"), c.allow, rec.Body)
			}
			if c.method != "HEAD" && (!strings.Contains(rec.Body.String(), "urn:yukta:problem:method-not-allowed") ||
				rec.Header().Get("Content-Type") != "application/problem+json") {
				t.Errorf("%s: %s %s: not a problem: %s %s", mode.name, c.method, c.path, rec.Header().Get("Content-Type"), rec.Body)
			}
			if rec := send(mode.srv, "OPTIONS", c.path, "", mode.key); rec.Code != http.StatusNoContent || rec.Header().Get("Allow") != c.allow {
				t.Errorf("%s: OPTIONS %s: %d Allow %q, want 204 Allow %q", mode.name, c.path, rec.Code, rec.Header().Get("Allow"), c.allow)
			}
		}
		// The gates come first: a foreign Host, then (for a route that
		// needs one) a missing key.
		if rec := send(keyed, c.method, c.path, "evil.example", secret); rec.Code != http.StatusForbidden {
			t.Errorf("%s %s under a foreign Host: %d, want 403", c.method, c.path, rec.Code)
		}
		want := http.StatusUnauthorized
		if c.path == "/healthz" {
			want = http.StatusMethodNotAllowed
		}
		if rec := send(keyed, c.method, c.path, "", ""); rec.Code != want {
			t.Errorf("%s %s without a key: %d, want %d", c.method, c.path, rec.Code, want)
		}
	}
}
