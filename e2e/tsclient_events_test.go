package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTSClientTypesTheEventStream: a TypeScript client generated from
// api/openapi.yaml by openapi-typescript (pinned in e2e/tsclient) types the
// event stream. e2e/tsclient/events.ts parses a record's data as
// EventEnvelope and narrows it by type in a switch with an exhaustive never
// check; it must compile with tsc --strict. Two broken copies must not: one
// whose switch misses a type, one that reads a member another type has.
func TestTSClientTypesTheEventStream(t *testing.T) {
	t.Parallel()
	node := tsClient(t)
	dir := t.TempDir()
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	modules, err := filepath.Abs(filepath.Join(tsClientDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := filepath.Abs(filepath.Join("..", "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run(filepath.Join(modules, "openapi-typescript", "bin", "cli.js"), spec, "-o", filepath.Join(dir, "api.d.ts")); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(tsClientDir, "events.ts"))
	if err != nil {
		t.Fatal(err)
	}
	tsc := func(name, text string) (string, error) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return run(filepath.Join(modules, "typescript", "bin", "tsc"), "--noEmit", "--strict",
			"--target", "es2022", "--module", "es2022", "--moduleResolution", "bundler", name)
	}
	if out, err := tsc("events.ts", string(src)); err != nil {
		t.Fatalf("events.ts does not compile against the generated types: %v\n%s", err, out)
	}

	for _, c := range []struct{ name, from, to, want string }{
		{"missing.ts", `    case "DelegationAnswered":` + "\n", "", `"DelegationAnswered"`},
		{"wrong.ts", "${ev.data.prompt}", "${ev.data.status}", "Property 'status' does not exist"},
	} {
		if !strings.Contains(string(src), c.from) {
			t.Fatalf("events.ts no longer holds %q; update this test", c.from)
		}
		out, err := tsc(c.name, strings.Replace(string(src), c.from, c.to, 1))
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%s compiled (%v) or failed for another reason; want an error naming %s:\n%s", c.name, err, c.want, out)
		}
	}
}
