package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// checkoutBinary builds yukta from a clone of this checkout's HEAD, as a
// user who builds from a checkout does, and returns the binary and the
// commit. It clones because the Go toolchain stamps no VCS information in
// a git worktree (it looks for a .git directory) or under
// GOFLAGS=-buildvcs=false, both of which the test binary may run in.
func checkoutBinary(t *testing.T) (bin, commit string) {
	t.Helper()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	commit = git("..", "rev-parse", "HEAD")
	top := git("..", "rev-parse", "--show-toplevel")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	git(dir, "clone", "--quiet", "--no-checkout", top, src)
	git(src, "checkout", "--quiet", "--detach", commit)
	bin = filepath.Join(dir, "yukta")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in a clone: %v\n%s", err, out)
	}
	return bin, commit
}

// TestVersionFromCheckout: a binary built from a checkout knows its commit,
// and every door says the same: `yukta version`, GET /api/version, the
// yukta_build_info metric, and the serverInfo of both MCP endpoints.
func TestVersionFromCheckout(t *testing.T) {
	t.Parallel()
	bin, commit := checkoutBinary(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("yukta version: %v\n%s", err, out)
	}
	line := strings.TrimSpace(string(out))
	// "yukta v0.0.0-20261201123456-9447398abcde (revision 9447…, 2026-…) go1.26.8 linux/amd64"
	fields := strings.Fields(line)
	if len(fields) < 3 || fields[0] != "yukta" {
		t.Fatalf("yukta version printed %q", line)
	}
	version := fields[1]
	platform := runtime.GOOS + "/" + runtime.GOARCH
	if !strings.HasPrefix(version, "v0.0.0-") || !strings.HasSuffix(version, commit[:12]) ||
		!strings.Contains(line, "(revision "+commit+", ") || !strings.HasSuffix(line, " "+platform) {
		t.Fatalf("yukta version printed %q, want the pseudo-version of %s, the revision in full and %s", line, commit, platform)
	}

	s := startServer(t, serverOptions{Binary: bin, DSN: pgtest.NewDatabase(t)})
	st, b, _ := call(t, s, "GET", "/api/version", "", nil)
	var v struct {
		Version, Revision, GoVersion, Platform string
		RevisionTime                           time.Time
		Modified                               bool
	}
	if st != http.StatusOK || json.Unmarshal(b, &v) != nil {
		t.Fatalf("GET /api/version: %d %s", st, b)
	}
	if v.Version != version || v.Revision != commit || v.Modified || v.RevisionTime.IsZero() || v.Platform != platform ||
		!strings.Contains(line, " "+v.GoVersion+" ") || !strings.Contains(line, v.RevisionTime.Format(time.RFC3339)) {
		t.Fatalf("GET /api/version: %s; yukta version: %q", b, line)
	}

	body := scrapeMetrics(t, s)
	wantMetric(t, body, `yukta_build_info{goversion="`+v.GoVersion+`",revision="`+commit+`",version="`+version+`"}`, 1)

	cs := mustConnect(t, s.URL, "")
	if got := cs.InitializeResult().ServerInfo.Version; got != version {
		t.Fatalf("MCP serverInfo.version %q, want %q", got, version)
	}

	// The agent MCP endpoint answers with the same version, to a
	// supervisor's credential.
	if st, b, _ := call(t, s, "PUT", "/api/sessions/ci", "", napSession("ci")); st != http.StatusCreated {
		t.Fatalf("apply: %d %s", st, b)
	}
	if st, b, _ := call(t, s, "PUT", "/api/supervisors/agent", "", []byte(`{"name":"Agent","owns":["session:ci"],
		"engine":{"type":"http","settings":{}}}`)); st != http.StatusCreated && st != http.StatusOK {
		t.Fatalf("apply the supervisor: %d %s", st, b)
	}
	st, b, _ = call(t, s, "POST", "/api/supervisors/agent/credential", "", nil)
	var c struct{ Token string }
	if st != http.StatusCreated || json.Unmarshal(b, &c) != nil {
		t.Fatalf("issue a credential: %d %s", st, b)
	}
	as, err := mcpConnect(t.Context(), s.URL, "/api/agent/v1/mcp", c.Token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = as.Close() })
	if got := as.InitializeResult().ServerInfo.Version; got != version {
		t.Fatalf("agent MCP serverInfo.version %q, want %q", got, version)
	}
}
