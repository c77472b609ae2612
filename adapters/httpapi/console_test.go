package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/web"
	"github.com/yukta/yukta/domain/access"
)

// consoleServer is the API with the real console mounted, keyed or open.
func consoleServer(t *testing.T, keyed bool) http.Handler {
	t.Helper()
	page, err := web.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Console: page}
	if keyed {
		spec, err := access.NewKeySpec("admin", access.Admin, nil, "console-secret-0123456789abcdef")
		if err != nil {
			t.Fatal(err)
		}
		ring, err := access.NewKeyring([]access.KeySpec{spec})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Security = Security{Keys: authn.Keys{API: authn.NewRing(ring)}}
	}
	srv, _, _ := strictServer(t, cfg)
	return srv.Handler()
}

// The console's routes beside the API: a page path answers the page (GET
// and HEAD, with the Content-Security-Policy, no key needed: it holds no
// data); an /api/ path no route has answers a problem (401 without a key,
// 404 with one or in open mode), never the page; another method on a page
// path is 405; the Host/Origin gate refuses a foreign Host or Origin
// before the page, as before the API.
func TestConsoleRoutes(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{true, false} {
		h := consoleServer(t, keyed)
		name := map[bool]string{true: "keyed", false: "open"}[keyed]
		for _, p := range []string{"/", "/sessions", "/sessions/alpha/executions/x", "/keys", "/workers"} {
			for _, m := range []string{"GET", "HEAD"} {
				a := send(h, m, p, "", nil)
				csp := a.header.Get("Content-Security-Policy")
				if a.status != 200 || csp != web.ContentSecurityPolicy || !strings.HasPrefix(a.ctype, "text/html") || (m == "GET") != strings.Contains(a.body, "<html") {
					t.Errorf("%s %s %s: %d %q CSP %q %.80q", name, m, p, a.status, a.ctype, csp, a.body)
				}
			}
			for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
				if a := send(h, m, p, jsonCT, []byte(`{}`)); a.status != http.StatusMethodNotAllowed || strings.Contains(a.body, "<html") {
					t.Errorf("%s %s %s: %d %.80q, want 405", name, m, p, a.status, a.body)
				}
			}
		}
		want := map[bool]int{true: http.StatusUnauthorized, false: http.StatusNotFound}[keyed]
		for _, p := range []string{"/api/nosuch", "/api/", "/api", "/api/sessions/a/b/c/d/e/f", "/api/keys/x/nosuch"} {
			for _, m := range []string{"GET", "HEAD"} {
				a := send(h, m, p, "", nil)
				if a.status != want || strings.Contains(a.body, "<html") || (m == "GET" && want == http.StatusNotFound && !strings.Contains(a.body, "GET /api/openapi.yaml lists every route")) || a.header.Get("Content-Security-Policy") == web.ContentSecurityPolicy ||
					(m == "GET" && !strings.HasPrefix(a.ctype, "application/problem+json")) {
					t.Errorf("%s %s %s: %d %q %.80q, want a %d problem", name, m, p, a.status, a.ctype, a.body, want)
				}
			}
		}
		if keyed {
			a := send(h, "GET", "/api/nosuch", "", nil, "Authorization", "Bearer console-secret-0123456789abcdef")
			if a.status != http.StatusNotFound || !strings.HasPrefix(a.ctype, "application/problem+json") || !strings.Contains(a.body, "no route GET /api/nosuch") {
				t.Errorf("keyed GET /api/nosuch with the key: %d %q %.80q, want a 404 problem", a.status, a.ctype, a.body)
			}
		}
		// The gate: a foreign Host on the page, a foreign Origin on a write.
		for _, c := range []struct{ method, path, host, origin string }{
			{"GET", "/", "evil.example", ""},
			{"GET", "/sessions", "127.0.0.1.nip.io:8080", ""},
			{"GET", "/assets/app.js", "evil.example:8080", ""},
			{"POST", "/api/keys", "127.0.0.1:8080", "http://evil.example"},
			{"GET", "/api/self", "127.0.0.1:8080", "http://localhost:3000"},
		} {
			req := httptest.NewRequest(c.method, "http://"+c.host+c.path, strings.NewReader(`{"name":"x","role":"ADMIN"}`))
			req.Header.Set("Content-Type", jsonCT)
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden || strings.Contains(rec.Body.String(), "<html") || !strings.Contains(rec.Body.String(), "YUKTA_ALLOWED_") {
				t.Errorf("%s %s %s Host %s Origin %q: %d %.120q, want the gate's 403", name, c.method, c.path, c.host, c.origin, rec.Code, rec.Body.String())
			}
		}
	}
}
