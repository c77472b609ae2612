// Package npmci readies the repository's Node projects (web/, the e2e
// clients, the TypeScript worker) for the tests that run them: it runs
// `npm ci` in a project when node_modules is missing or holds another
// version of a package than package.json pins exactly, under a file lock
// so that test processes running at once do not install over each other.
// `go test ./...` works on a fresh clone this way, and fails loudly when
// node or npm is missing.
package npmci

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// installTimeout bounds one `npm ci`.
const installTimeout = 5 * time.Minute

var (
	mu   sync.Mutex
	done = map[string]error{}
)

// Node returns the node binary once the project in dir is installed as
// pinned (once per test process and directory), or fails the test saying
// how to get there.
func Node(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	err, ok := done[abs]
	if !ok {
		err = Ensure(abs)
		done[abs] = err
	}
	mu.Unlock()
	if err != nil {
		t.Fatalf("the Node project %s cannot run: %v\n"+
			"Install Node.js 20 or later and npm (Debian: apt-get install nodejs npm), then run `npm ci` there.", dir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH")
	}
	return node
}

// Ensure installs dir's packages with `npm ci` unless node_modules already
// holds exactly what package.json pins.
func Ensure(dir string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node is not on PATH")
	}
	if Pinned(dir) == nil {
		return nil
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if Pinned(dir) == nil { // another process installed it meanwhile
		return nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return fmt.Errorf("%s/node_modules is missing or stale and npm is not on PATH", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := Pinned(dir); err != nil {
		return fmt.Errorf("after npm ci, %w", err)
	}
	return nil
}

// Pinned reports the first package of dir's package.json (dependencies and
// devDependencies) that is not pinned to one exact version, or that
// node_modules lacks or holds in another version.
func Pinned(dir string) error {
	var pkg struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		return fmt.Errorf("read %s/package.json: %w", dir, err)
	}
	all := maps.Clone(pkg.Dependencies)
	maps.Copy(all, pkg.DevDependencies)
	for _, name := range slices.Sorted(maps.Keys(all)) {
		want := all[name]
		if want == "" || strings.ContainsAny(want, "^~<>=*x |") {
			return fmt.Errorf("%s/package.json must pin %s to one exact version, not %q", dir, name, want)
		}
		var got struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
		if err != nil || json.Unmarshal(b, &got) != nil || got.Version != want {
			return fmt.Errorf("%s/node_modules has %s %q, want %q", dir, name, got.Version, want)
		}
	}
	return nil
}
