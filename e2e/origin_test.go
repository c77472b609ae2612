package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// newOpenAccessEnv is newAccessEnv with no key configured (the default
// `yukta serve`): every caller is the anonymous ADMIN.
func newOpenAccessEnv(t *testing.T, extra ...string) *accessEnv {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Env: extra})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := &accessEnv{env: &env{t: t, s: s, c: s.Client, ctx: context.Background()}, db: db, execs: map[string]string{}}
	for _, sid := range []string{"alpha", "beta"} {
		e.apply(sid, wf("wf", []string{nd("start", "MANUAL", ""), nd("log", "LOG", `{"message":"hello"}`)}, []string{ed("start", "log", "")}))
		e.execs[sid] = e.start(sid, "wf", map[string]any{"n": 1})
		e.waitStatus(sid, e.execs[sid], apiclient.ExecutionStatusSUCCESS)
	}
	return e
}

const startPath = "/api/sessions/alpha/workflows/wf/executions"

// TestOriginLocalPagesCannotWrite is issue 11's finding 1 as it was found:
// with no key set, a page served by another program on this machine (a dev
// server on localhost:3000) could start and stop runs. Now it gets 403 and
// nothing runs, in open and keyed mode, while the CLI (no Origin) and a page
// of the server's own origin still work.
func TestOriginLocalPagesCannotWrite(t *testing.T) {
	for _, mode := range []struct {
		name string
		e    func(*testing.T) *accessEnv
		key  string
	}{
		{"open", func(t *testing.T) *accessEnv { return newOpenAccessEnv(t) }, ""},
		{"keyed", func(t *testing.T) *accessEnv { return newAccessEnv(t) }, testKeys["operator"]},
	} {
		t.Run(mode.name, func(t *testing.T) {
			e := mode.e(t)
			port := e.s.URL[strings.LastIndex(e.s.URL, ":")+1:]
			stop := "/api/sessions/alpha/workflows/wf/stop"
			before := e.counts()
			for _, hdr := range [][]string{
				{"Origin", "http://localhost:3000", "Sec-Fetch-Site", "cross-site"}, // the finding's curl
				{"Origin", "http://localhost:3000", "Sec-Fetch-Site", "same-site"},
				{"Origin", "http://localhost:3000"},
				{"Origin", "http://127.0.0.1:3000", "Sec-Fetch-Site", "same-site"},
				{"Origin", "http://[::1]:3000"},
				{"Sec-Fetch-Site", "same-site"}, // no Origin: a page of this site, another port
				{"Sec-Fetch-Site", "cross-site"},
				{"Origin", "http://127.0.0.1:" + port, "Sec-Fetch-Site", "cross-site"},
			} {
				for _, path := range []string{startPath, stop} {
					body := `{"payload":{"n":2}}`
					if path == stop {
						body = `{"mode":"CANCEL"}`
					}
					status, b, _ := call(t, e.s, "POST", path, mode.key, []byte(body), hdr...)
					if status != 403 || !strings.Contains(string(b), "YUKTA_ALLOWED_ORIGINS") {
						t.Errorf("POST %s with %v: %d %s, want the gate's 403", path, hdr, status, b)
					}
				}
			}
			e.assertUnchanged("writes from local pages of other origins", before)
			// The CLI and other programs send no Origin; a page of the
			// server's own origin sends its own, under any loopback name.
			for _, hdr := range [][]string{
				nil,
				{"Origin", "http://127.0.0.1:" + port, "Sec-Fetch-Site", "same-origin"},
				{"Origin", "http://localhost:" + port, "Host", "localhost:" + port, "Sec-Fetch-Site", "same-origin"},
				{"Origin", "http://localhost:" + port},
			} {
				status, b, _ := call(t, e.s, "POST", startPath, mode.key, []byte(`{"payload":{"n":3}}`), hdr...)
				if status != 201 {
					t.Errorf("a start with %v: %d %s, want 201", hdr, status, b)
				}
			}
			e.settle()
			// A same-site page may still read (GET is no change), but not
			// from another origin.
			if status, b, _ := call(t, e.s, "GET", "/api/sessions", mode.key, nil, "Sec-Fetch-Site", "same-site"); status != 200 {
				t.Errorf("a same-site read without Origin: %d %s, want 200", status, b)
			}
			if status, b, _ := call(t, e.s, "GET", "/api/sessions", mode.key, nil, "Origin", "http://localhost:3000", "Sec-Fetch-Site", "same-site"); status != 403 {
				t.Errorf("a read from localhost:3000: %d %s, want 403", status, b)
			}
		})
	}
}

// TestOriginAllowedOrigins: YUKTA_ALLOWED_ORIGINS lets a page of a named
// origin call the server, in open and keyed mode (with a key), and no other
// origin; a value that is not an origin stops the server naming the
// setting.
func TestOriginAllowedOrigins(t *testing.T) {
	for _, mode := range []struct {
		name string
		e    func(*testing.T) *accessEnv
		key  string
	}{
		{"open", func(t *testing.T) *accessEnv {
			return newOpenAccessEnv(t, "YUKTA_ALLOWED_ORIGINS=http://localhost:3000, https://ui.example")
		}, ""},
		{"keyed", func(t *testing.T) *accessEnv {
			return newAccessEnv(t, "YUKTA_ALLOWED_ORIGINS=http://localhost:3000, https://ui.example")
		}, testKeys["operator"]},
	} {
		t.Run(mode.name, func(t *testing.T) {
			e := mode.e(t)
			for _, hdr := range [][]string{
				{"Origin", "http://localhost:3000", "Sec-Fetch-Site", "same-site"},
				{"Origin", "http://localhost:3000", "Sec-Fetch-Site", "cross-site"},
				{"Origin", "https://ui.example:443", "Sec-Fetch-Site", "cross-site"},
			} {
				status, b, _ := call(t, e.s, "POST", startPath, mode.key, []byte(`{"payload":{"n":4}}`), hdr...)
				if status != 201 {
					t.Errorf("a start from the allowed %v: %d %s, want 201", hdr, status, b)
				}
			}
			e.settle()
			before := e.counts()
			for _, o := range []string{"http://localhost:3001", "http://127.0.0.1:3000", "https://localhost:3000", "http://ui.example", "https://ui.example:8443"} {
				status, b, _ := call(t, e.s, "POST", startPath, mode.key, []byte(`{"payload":{"n":5}}`), "Origin", o, "Sec-Fetch-Site", "same-site")
				if status != 403 {
					t.Errorf("a start from %s, not allowed: %d %s, want 403", o, status, b)
				}
			}
			e.assertUnchanged("starts from origins not allowed", before)
			if mode.key != "" {
				if status, b, _ := call(t, e.s, "POST", startPath, "", []byte(`{}`), "Origin", "http://localhost:3000"); status != 401 {
					t.Errorf("an allowed origin without a key: %d %s, want 401: the origin is no key", status, b)
				}
			}
		})
	}
	cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--database-url", "postgres://127.0.0.1:1/none")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "YUKTA_ALLOWED_ORIGINS=http://localhost:3000,localhost:3001"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := -1
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 2 || !strings.Contains(stderr.String(), "YUKTA_ALLOWED_ORIGINS") || !strings.Contains(stderr.String(), strconv.Quote("localhost:3001")) {
		t.Fatalf("a bad YUKTA_ALLOWED_ORIGINS: exit %d (%v), stderr %s; want exit 2 naming the setting and the value", code, err, stderr.String())
	}
}
