package mcpserver

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuideTemplatesCompile builds the plugin guide's templates as one
// package inside this module, through a build overlay (nothing is written
// to the repository), so they type-check against the real contract:
// domain/plugin.Descriptor and executionapp.Runner.
func TestGuideTemplatesCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	pkgDir := filepath.Join(wd, "guidecheck_overlay")
	tmp := t.TempDir()
	replace := map[string]string{}
	kinds := map[string]bool{}
	for i, tpl := range Guide().Templates {
		kinds[tpl.Kind] = true
		src := filepath.Join(tmp, tpl.Kind+".go")
		if err := os.WriteFile(src, []byte(tpl.Code), 0o600); err != nil {
			t.Fatal(err)
		}
		replace[filepath.Join(pkgDir, filepath.Base(tpl.File))] = src
		_ = i
	}
	if !kinds["server"] || !kinds["processor"] || !kinds["terminal"] || kinds["trigger"] {
		t.Fatalf("templates cover %v, want the server's main.go, a processor and a terminal (no trigger: a type of your own cannot start runs)", kinds)
	}
	ov, _ := json.Marshal(map[string]any{"Replace": replace})
	ovPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", ovPath, "-o", os.DevNull, "./guidecheck_overlay")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("templates do not compile: %v\n%s", err, out)
	}
}

func TestGuideNamesTheRealContract(t *testing.T) {
	t.Parallel()
	g := Guide()
	all := g.Architecture + g.Contract + g.Registration
	// Both paths that need no fork: remote workers and a custom server on
	// the public extension API.
	for _, want := range []string{"server.Runner", "server.Descriptor", "Invocation", "Outcome", "server.Main", "server.WithNodeType", "IdempotencyKey",
		"github.com/yukta/yukta/server", "docs/extending.md", "examples/custom-server", "TASK", "/api/worker/v1", "WORKER", "docs/workers.md"} {
		if !strings.Contains(all, want) {
			t.Errorf("guide does not mention %s", want)
		}
	}
	for _, stale := range []string{"extends", "WorkflowContext", "TriggerPlugin", "WorkflowRegistry",
		"compiled into the server", "no runtime plugin loading", "adapters/plugins", "Descriptors()", "NewRunners", "executionapp.", "domain/plugin"} {
		if strings.Contains(all, stale) {
			t.Errorf("guide mentions the seed's stale contract %q", stale)
		}
	}
}
