package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/domain/access"
)

// hit sends one request to h in process with the given Host line and source
// address, and returns the status and body.
func hit(h http.Handler, method, target, host, src string, header ...string) (int, string) {
	var body *strings.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"payload":{"n":1}}`)
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, "http://127.0.0.1"+target, body)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if host != "" {
		req.Host = host
	}
	if src != "" {
		req.RemoteAddr = src + ":40000"
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestParseOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:3000":   "http://localhost:3000",
		"HTTP://LocalHost:3000":   "http://localhost:3000",
		"http://127.0.0.1:80":     "http://127.0.0.1",
		"https://ui.example:443":  "https://ui.example",
		"https://ui.example:8443": "https://ui.example:8443",
		"http://[::1]:8080":       "http://[::1]:8080",
		"http://[::1]":            "http://[::1]",
		"http://x.example/":       "http://x.example",
	} {
		o, err := ParseOrigin(in)
		if err != nil || o.String() != want {
			t.Errorf("ParseOrigin(%q) = %q, %v; want %q", in, o, err, want)
		}
	}
	for _, bad := range []string{"", "null", "*", "localhost:3000", "//localhost:3000", "file:///etc", "ftp://x.example", "http://",
		"http://x.example/app", "http://x.example?", "http://x.example?q=1", "http://x.example#f", "http://u:p@x.example",
		"http://*.example", "http://x.example:", "http://[::1", "javascript:alert(1)"} {
		if o, err := ParseOrigin(bad); err == nil {
			t.Errorf("ParseOrigin(%q) = %q, want an error", bad, o)
		}
	}
}

// TestOriginGateMatrix drives a state-changing route (a start) and a read
// (an execution) with every Origin a local page or a rebinding page could
// send, against a server reached as 127.0.0.1:8080, localhost:8080 and
// [::1]:8080, with every Sec-Fetch-Site, in open and keyed mode, and with an
// explicitly allowed origin. Which cells pass is written out here, not
// derived from the gate's code: only the server's own port on a loopback
// name, or the allowed origin; no cross-site; no same-site change.
func TestOriginGateMatrix(t *testing.T) {
	const secret = "admin-secret-0123456789abcdefgh"
	spec, err := access.NewKeySpec("admin", access.Admin, nil, secret)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := access.NewKeyring([]access.KeySpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{
		"http://127.0.0.1:8080": true, "http://localhost:8080": true, "http://[::1]:8080": true,
		"https://localhost:8080": true, "http://app.localhost:8080": true, "http://127.0.0.2:8080": true,
	}
	origins := []string{"", "null",
		"http://localhost:3000", "http://127.0.0.1:3000", "http://[::1]:3000", "http://app.localhost:3000",
		"http://localhost", "http://127.0.0.1", "https://localhost", "http://localhost:80", "http://localhost:8081",
		"http://evil.example", "http://evil.example:8080", "http://127.0.0.1.nip.io:8080", "http://localhost.:8080",
		"http://ui.example:3000", "http://ui.example",
		"http://localhost:8080/", "http://localhost:8080/path", "localhost:8080",
	}
	for o := range own {
		origins = append(origins, o)
	}
	sites := []string{"", "none", "same-origin", "same-site", "cross-site"}
	hosts := []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080"}
	routes := []struct{ method, path, call string }{
		{"POST", "/api/sessions/s1/workflows/w/executions", "start"},
		{"GET", "/api/sessions/s1/executions/0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f", "get"},
	}
	modes := []struct {
		name    string
		cfg     Config
		key     string
		allowed string
	}{
		{"open", Config{}, "", ""},
		{"keyed", Config{Security: Security{Keys: authn.Keys{API: authn.NewRing(ring)}}}, secret, ""},
		{"open, ui.example:3000 allowed", Config{AllowedOrigins: []string{"HTTP://UI.example:3000"}}, "", "http://ui.example:3000"},
		{"keyed, ui.example:3000 allowed", Config{AllowedOrigins: []string{"http://ui.example:3000/"}, Security: Security{Keys: authn.Keys{API: authn.NewRing(ring)}}}, secret, "http://ui.example:3000"},
	}
	cells, refused := 0, 0
	for _, m := range modes {
		srv, f, _ := strictServer(t, m.cfg)
		for _, host := range hosts {
			for _, r := range routes {
				for _, o := range origins {
					for _, site := range sites {
						var hdr []string
						if o != "" {
							hdr = append(hdr, "Origin", o)
						}
						if site != "" {
							hdr = append(hdr, "Sec-Fetch-Site", site)
						}
						if m.key != "" {
							hdr = append(hdr, "Authorization", "Bearer "+m.key)
						}
						trusted := m.allowed != "" && o == m.allowed
						pass := o == "" || own[o] || trusted || o == "http://localhost:8080/"
						if !trusted && (site == "cross-site" || site == "same-site" && r.method != "GET") {
							pass = false
						}
						f.reset()
						status, body := hit(srv.Handler(), r.method, r.path, host, "", hdr...)
						cells++
						what := fmt.Sprintf("%s: %s %s Host %s Origin %q Sec-Fetch-Site %q", m.name, r.method, r.path, host, o, site)
						if pass {
							if status == 403 || len(f.called()) != 1 || f.called()[0] != r.call {
								t.Errorf("%s: %d %s, calls %v; want it served", what, status, body, f.called())
							}
							continue
						}
						refused++
						if status != 403 || !strings.Contains(body, "urn:yukta:problem:forbidden") || !strings.Contains(body, "YUKTA_ALLOWED_ORIGINS") {
							t.Errorf("%s: %d %s; want the gate's 403", what, status, body)
						}
						if calls := f.called(); len(calls) != 0 {
							t.Errorf("%s: the handler ran (%v)", what, calls)
						}
					}
				}
			}
		}
	}
	t.Logf("%d cells, %d refused by the gate with no handler run, %d served", cells, refused, cells-refused)
}

// TestOriginIsTheRequestsOwnPort: behind a proxy that keeps Host, the page's
// origin is the public name, on the default port of its scheme.
func TestOriginIsTheRequestsOwnPort(t *testing.T) {
	srv, f, _ := strictServer(t, Config{AllowedHosts: []string{"yukta.example"}})
	for _, c := range []struct {
		host, origin string
		pass         bool
	}{
		{"yukta.example", "https://yukta.example", true},
		{"yukta.example", "http://yukta.example", true},
		{"yukta.example", "https://yukta.example:443", true},
		{"yukta.example:8443", "https://yukta.example:8443", true},
		{"yukta.example", "https://yukta.example:8443", false},
		{"yukta.example:8443", "https://yukta.example", false},
		{"yukta.example", "https://other.example", false},
		{"yukta.example", "https://sub.yukta.example", false},
		{"yukta.example", "http://localhost", false},
		{"localhost", "http://yukta.example", false},
	} {
		f.reset()
		status, body := hit(srv.Handler(), "POST", "/api/sessions/s1/workflows/w/executions", c.host, "", "Origin", c.origin, "Sec-Fetch-Site", "same-origin")
		if got := status != 403 && len(f.called()) == 1; got != c.pass {
			t.Errorf("Host %s Origin %s: %d %s, served %v, want %v", c.host, c.origin, status, body, got, c.pass)
		}
	}
}

func TestNewRefusesABadAllowedOrigin(t *testing.T) {
	if _, err := New(Config{AllowedOrigins: []string{"localhost:3000"}}, UseCases{}, nil); err == nil || !strings.Contains(err.Error(), "is not an origin") {
		t.Fatalf("New with a bad allowed origin: %v", err)
	}
}

// TestChannelIsClaimed: a start that says it came from the CLI is recorded
// as the client's claim; one that says nothing, or rest, as rest.
func TestChannelIsClaimed(t *testing.T) {
	srv, f, _ := strictServer(t, Config{})
	for header, want := range map[string]string{"": "rest", "rest": "rest", "cli": "cli (claimed)"} {
		f.reset()
		var hdr []string
		if header != "" {
			hdr = []string{"Yukta-Channel", header}
		}
		status, body := hit(srv.Handler(), "POST", "/api/sessions/s1/workflows/w/executions", "", "", hdr...)
		if status != 201 || len(f.starts) != 1 || f.starts[0].Channel != want {
			t.Errorf("Yukta-Channel %q: %d %s %+v, want channel %q", header, status, body, f.starts, want)
		}
	}
	status, body := hit(srv.Handler(), "POST", "/api/sessions/s1/workflows/w/executions", "", "", "Yukta-Channel", "cli (claimed)")
	if status != 400 {
		t.Errorf("a client naming the claimed form itself: %d %s, want 400 (only rest and cli may be sent)", status, body)
	}
}
