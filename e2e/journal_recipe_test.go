package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/tools/npmci"

	"github.com/yukta/yukta/api/apiclient"
)

// TestJournalRecipeJavaScript runs the JavaScript verifier that
// docs/journal.md prints, as written there, with the package version it pins,
// against a real export whose records hold text that JSON encoders escape
// differently. It must print VALID for the export, and refuse an edited
// record and a cut tail.
func TestJournalRecipeJavaScript(t *testing.T) {
	t.Parallel()
	node := nodeProject(t, journalJSDir, "canonicalize")
	recipe := testedBlocks(t, "docs/journal.md", "TestJournalRecipeJavaScript", 1)[0].Body
	dir := t.TempDir()
	script := filepath.Join(dir, "verify.js")
	if err := os.WriteFile(script, []byte(recipe), 0o600); err != nil {
		t.Fatal(err)
	}

	e := newEnv(t)
	e.apply("jr", line("odd", nd("start", "MANUAL", ""), nd("wait", "DELAY", `{"duration":"30s"}`), nd("out", "RESULT", "")))
	id := e.start("jr", "odd", nil)
	e.waitNode("jr", id, "start", "done", func(n apiclient.ExecutionNode) bool { return n.Status == apiclient.NodeStatusSUCCESS })
	// The reason is journaled with the command: text that JSON encoders
	// escape differently (HTML characters, U+2028, a control character,
	// characters outside the BMP), which the canonical form fixes.
	reason := `<b>&\u2028\u001f \u00e9 \ud83d\ude00 \"q\"`
	if code, body, _ := call(t, e.s, http.MethodPost, "/api/sessions/jr/executions/"+id+"/control", "", []byte(`{"action":"PAUSE","reason":"`+reason+`"}`)); code != http.StatusOK {
		t.Fatalf("pause: %d %s", code, body)
	}
	if r, err := e.c.ControlExecutionWithResponse(e.ctx, "jr", id, nil, apiclient.ExecutionCommand{Action: apiclient.ExecutionCommandActionSTOP}); err != nil || r.JSON200 == nil {
		t.Fatalf("stop: %v %v", err, r)
	}
	e.waitExec("jr", id, "the end", func(x apiclient.Execution) bool { return x.EndedAt != nil })
	e.verifyJournal(id)
	out := yukta(t, e.s.URL, "journal", "export", "jr", id)
	cliWant(t, out, 0)
	lines := strings.Split(strings.TrimSuffix(out.stdout, "\n"), "\n")
	var want string
	if err := json.Unmarshal([]byte(`"`+reason+`"`), &want); err != nil {
		t.Fatal(err)
	}
	if !journalHasReason(lines, want) {
		t.Fatalf("the export does not hold the reason %q, so the recipe is not tested on it:\n%s", want, out.stdout)
	}
	kr, err := e.c.GetJournalPublicKeyWithResponse(e.ctx)
	if err != nil || kr.JSON200 == nil {
		t.Fatalf("public key: %v %v", err, kr)
	}
	key := kr.JSON200.PublicKey

	run := func(name string, ls []string) (string, error) {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(strings.Join(ls, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script, file, key)
		cmd.Env = []string{"NODE_PATH=" + filepath.Join(mustAbs(t, journalJSDir), "node_modules")}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if got, err := run("run.ndjson", lines); err != nil || strings.TrimSpace(got) != "VALID" {
		t.Fatalf("the recipe on a true export: %v\n%s\nexport:\n%s", err, got, out.stdout)
	}
	edited := append([]string(nil), lines...)
	edited[1] = strings.Replace(edited[1], `"actor":"`, `"actor":"x`, 1)
	if got, err := run("edited.ndjson", edited); err == nil || !strings.Contains(got, "INVALID at 2: digest") {
		t.Errorf("the recipe on an edited record: %v\n%s", err, got)
	}
	cut := append(append([]string(nil), lines[:len(lines)-2]...), lines[len(lines)-1])
	if got, err := run("cut.ndjson", cut); err == nil || !strings.Contains(got, "INVALID: the checkpoint is not the tip") {
		t.Errorf("the recipe on a cut tail: %v\n%s", err, got)
	}
}

// journalHasReason reports whether a record of the export holds a command
// whose reason is want.
func journalHasReason(lines []string, want string) bool {
	for _, l := range lines {
		var r struct {
			Decision struct {
				Cause struct {
					Reason string `json:"reason"`
				} `json:"cause"`
			} `json:"decision"`
		}
		if json.Unmarshal([]byte(l), &r) == nil && r.Decision.Cause.Reason == want {
			return true
		}
	}
	return false
}

// journalJSDir is the Node project that pins the recipe's package.
const journalJSDir = "journaljs"

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// nodeProject returns the node binary once the Node project in dir has
// its packages installed as pinned (tools/npmci), after checking that pkg,
// the package the test relies on, is one of them.
func nodeProject(t *testing.T, dir, pkg string) string {
	t.Helper()
	node := npmci.Node(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
		t.Fatalf("e2e/%s has no %s: pin it in its package.json", dir, pkg)
	}
	return node
}
