// Package webtest prepares the console's Node project (web/) for the tests
// that need it: the bundle check in adapters/web and the browser tests in
// e2e. It runs `npm ci` there when node_modules is missing or holds another
// version than package.json pins, under a file lock so that test processes
// running at once do not install over each other, and it fails the test,
// loudly, when node or npm is missing.
package webtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	once sync.Once
	dir  string
	node string
	err  error
)

// Prepare returns the web/ directory and the node binary, with web/'s
// packages installed as pinned.
func Prepare(t testing.TB) (webDir, nodeBin string) {
	t.Helper()
	once.Do(func() { dir, node, err = prepare() })
	if err != nil {
		t.Fatalf("the console's Node project cannot run: %v\n"+
			"Install Node.js 20 or later and npm (Debian: apt-get install nodejs npm), then run `npm ci` in web/.", err)
	}
	return dir, node
}

// Dir returns the repository's web/ directory.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "web"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

func prepare() (string, string, error) {
	web, err := Dir()
	if err != nil {
		return "", "", err
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("node is not on PATH")
	}
	if installedAsPinned(web) == nil {
		return web, nodeBin, nil
	}
	lock, err := os.OpenFile(filepath.Join(web, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", "", fmt.Errorf("lock web/: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if installedAsPinned(web) == nil { // another process installed it meanwhile
		return web, nodeBin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "", fmt.Errorf("web/node_modules is missing or stale and npm is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = web
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("npm ci in web/: %v\n%s", err, out)
	}
	if err := installedAsPinned(web); err != nil {
		return "", "", fmt.Errorf("after npm ci, %w", err)
	}
	return web, nodeBin, nil
}

// installedAsPinned reports the first package of package.json that
// node_modules lacks or holds in another version than the exact one pinned.
func installedAsPinned(web string) error {
	var pkg struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	b, err := os.ReadFile(filepath.Join(web, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil {
		return fmt.Errorf("read web/package.json: %w", err)
	}
	all := maps.Clone(pkg.Dependencies)
	maps.Copy(all, pkg.DevDependencies)
	for _, name := range slices.Sorted(maps.Keys(all)) {
		var got struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(web, "node_modules", filepath.FromSlash(name), "package.json"))
		if err != nil || json.Unmarshal(b, &got) != nil || got.Version != all[name] {
			return fmt.Errorf("web/node_modules has %s %q, want %q", name, got.Version, all[name])
		}
	}
	return nil
}
