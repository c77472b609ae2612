// Package webtest finds the console's Node project (web/) for the tests
// that need it, the bundle check in adapters/web and the browser tests in
// e2e, installed as web/package-lock.json pins it (tools/npmci).
package webtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/yukta/yukta/tools/npmci"
)

// Prepare returns the web/ directory and the node binary, with web/'s
// packages installed as pinned; it fails the test when it cannot.
func Prepare(t testing.TB) (webDir, nodeBin string) {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	return dir, npmci.Node(t, dir)
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
