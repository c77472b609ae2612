package egress_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/egress"
)

func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return srv, u.Host // "127.0.0.1:<port>"
}

func client(t *testing.T, o egress.Options) *egress.Client {
	t.Helper()
	c, err := egress.New(o)
	if err != nil {
		t.Fatalf("New: got error %v, want nil", err)
	}
	return c
}

func get(t *testing.T, c *egress.Client, u string) (*egress.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(context.Background(), req)
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) }

func TestLoopbackIsRefusedByDefault(t *testing.T) {
	srv, host := server(t, ok)
	_, err := get(t, client(t, egress.Options{}), srv.URL+"/x?token=secret")
	var refused *egress.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Do: got %v, want a *RefusedError", err)
	}
	for _, want := range []string{"refused to connect to " + host, "127.0.0.1 is a loopback address", "YUKTA_EGRESS_ALLOWED_HOSTS=" + host} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Do error: got %q, want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("Do error: got %q, want no query string in it", err)
	}
}

func TestHostNameResolvingToLoopbackIsRefused(t *testing.T) {
	srv, _ := server(t, ok)
	port := srv.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	u := "http://localhost:" + strconv.Itoa(int(port)) + "/"
	_, err := get(t, client(t, egress.Options{AllowedHosts: []string{"127.0.0.1"}}), u)
	var refused *egress.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("Do(%s) with only 127.0.0.1 allowed: got %v, want a *RefusedError: the allow-list names hosts, not addresses", u, err)
	}
	if !strings.Contains(err.Error(), "localhost:") || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("Do error: got %q, want it to name localhost and loopback", err)
	}
}

func TestAllowListedHostAndPortIsReached(t *testing.T) {
	srv, host := server(t, ok)
	resp, err := get(t, client(t, egress.Options{AllowedHosts: []string{host}}), srv.URL)
	if err != nil {
		t.Fatalf("Do with %s allowed: got error %v, want nil", host, err)
	}
	if resp.Status != 200 || string(resp.Body) != "hello" {
		t.Errorf("Do: got %d %q, want 200 \"hello\"", resp.Status, resp.Body)
	}
}

func TestAllowListEntryWithPortMatchesOnlyThatPort(t *testing.T) {
	srv, _ := server(t, ok)
	_, err := get(t, client(t, egress.Options{AllowedHosts: []string{"127.0.0.1:1"}}), srv.URL)
	if !errors.As(err, new(*egress.RefusedError)) {
		t.Errorf("Do with only port 1 allowed: got %v, want a refusal", err)
	}
}

func TestAllowListIsCaseInsensitive(t *testing.T) {
	srv, _ := server(t, ok)
	port := srv.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	if _, err := get(t, client(t, egress.Options{AllowedHosts: []string{"LocalHost"}}), "http://LOCALHOST:"+strconv.Itoa(int(port))); err != nil {
		t.Errorf("Do with LocalHost allowed: got %v, want nil", err)
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	followed := false
	mux := http.NewServeMux()
	mux.HandleFunc("/from", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/to", http.StatusFound) })
	mux.HandleFunc("/to", func(http.ResponseWriter, *http.Request) { followed = true })
	srv, host := server(t, mux.ServeHTTP)
	resp, err := get(t, client(t, egress.Options{AllowedHosts: []string{host}}), srv.URL+"/from")
	if err != nil {
		t.Fatalf("Do: got error %v, want the 302", err)
	}
	if resp.Status != http.StatusFound || resp.Header.Get("Location") != "/to" || followed {
		t.Errorf("Do: got status %d, Location %q, followed %v; want 302, /to, false", resp.Status, resp.Header.Get("Location"), followed)
	}
}

func TestBodyCap(t *testing.T) {
	srv, host := server(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(strings.Repeat("x", 100))) })
	c := client(t, egress.Options{AllowedHosts: []string{host}, MaxResponseBytes: 99})
	if _, err := get(t, c, srv.URL); err == nil || !strings.Contains(err.Error(), "larger than the limit of 99 bytes") {
		t.Errorf("Do of 100 bytes with a cap of 99: got %v, want an error naming the cap", err)
	}
	c = client(t, egress.Options{AllowedHosts: []string{host}, MaxResponseBytes: 100})
	if resp, err := get(t, c, srv.URL); err != nil || len(resp.Body) != 100 {
		t.Errorf("Do of 100 bytes with a cap of 100: got error %v, want the body", err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	if _, err := c.DoLimited(context.Background(), req, 10); err == nil || !strings.Contains(err.Error(), "limit of 10 bytes") {
		t.Errorf("DoLimited 10: got %v, want an error naming the cap of 10", err)
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, host := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := client(t, egress.Options{AllowedHosts: []string{host}, Timeout: 50 * time.Millisecond})
	start := time.Now()
	if _, err := get(t, c, srv.URL); err == nil {
		t.Errorf("Do of a stalled server: got nil error, want a timeout")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Do of a stalled server returned after %s, want about 50ms", d)
	}
}

func TestOnlyHTTPSchemes(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "file:///etc/passwd", nil)
	if _, err := client(t, egress.Options{}).Do(context.Background(), req); err == nil || !strings.Contains(err.Error(), `scheme "file"`) {
		t.Errorf("Do of a file URL: got %v, want a refusal naming the scheme", err)
	}
}

func TestBadAllowListEntry(t *testing.T) {
	if _, err := egress.New(egress.Options{AllowedHosts: []string{"https://example.com/x"}}); err == nil || !strings.Contains(err.Error(), "YUKTA_EGRESS_ALLOWED_HOSTS") {
		t.Errorf("New with a URL as entry: got %v, want an error naming the setting", err)
	}
}

func TestParseAllowedHosts(t *testing.T) {
	got := egress.ParseAllowedHosts(" a.example, b.example:8080 ,,[::1]:9 ")
	want := []string{"a.example", "b.example:8080", "[::1]:9"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ParseAllowedHosts: got %q, want %q", got, want)
	}
}
