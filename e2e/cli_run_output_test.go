package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// delaySession holds ten messages in a DELAY for 3 s.
const delaySession = `{"sessionId": "dly", "name": "Delay", "workflows": [{"workflowId": "hold", "nodes": [
  {"nodeId": "start", "type": "MANUAL"},
  {"nodeId": "split", "type": "SPLIT", "config": {"field": "items"}},
  {"nodeId": "wait", "type": "DELAY", "config": {"duration": "3s"}},
  {"nodeId": "done", "type": "RESULT"}],
 "edges": [{"source": "start", "target": "split"}, {"source": "split", "target": "wait"}, {"source": "wait", "target": "done"}]}]}`

const tenItems = `{"items": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}`

// TestRunOutputAndWaitingNodes: `yukta run -o json` prints the start's
// answer as JSON (scripts scraped "execution: ID"), `--watch -o json` the
// ended run, with the progress on stderr and the run's exit code; a DELAY
// holding ten messages shows them (REST waiting/dueAt, "holding 10" in the
// watch) instead of PENDING 0 0; and on a terminal the watch's elapsed time
// moves while the DELAY waits. Before: -o was an unknown flag (exit 2), the
// node read PENDING 0 0 with nothing else, and the last RUNNING line's
// elapsed time was that of the last event, well under a second.
func TestRunOutputAndWaitingNodes(t *testing.T) {
	t.Parallel()
	srv := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	doc := filepath.Join(t.TempDir(), "dly.json")
	if err := os.WriteFile(doc, []byte(delaySession), 0o600); err != nil {
		t.Fatal(err)
	}
	cliWant(t, yukta(t, srv.URL, "apply", doc), 0, "session: dly")

	// -o json: the start's answer, nothing else on stdout.
	out := yukta(t, srv.URL, "run", "dly/hold", "--payload", tenItems, "-o", "json")
	var started struct{ ExecutionId, Status string }
	if out.code != 0 || json.Unmarshal([]byte(out.stdout), &started) != nil || started.ExecutionId == "" || started.Status != "RUNNING" {
		t.Fatalf("run -o json: want exit 0 and the start's answer as JSON\n%s", out)
	}

	// The DELAY holds the ten messages, with the time the first is due.
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, b := srv.do(t, "GET", "/api/sessions/dly/executions/"+started.ExecutionId, "", nil)
		var ex struct {
			Status string
			Nodes  []struct {
				NodeId, Status    string
				Received, Waiting int64
				DueAt             *time.Time
			}
		}
		if res.StatusCode != 200 || json.Unmarshal(b, &ex) != nil {
			t.Fatalf("GET: %d %s", res.StatusCode, b)
		}
		n := ex.Nodes[2]
		if n.NodeId == "wait" && n.Waiting == 10 && n.DueAt != nil && n.Received == 0 {
			break
		}
		if ex.Status != "RUNNING" || time.Now().After(deadline) {
			t.Fatalf("the DELAY never showed the ten messages it holds with their due time: %s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// --watch -o json: progress on stderr, the ended run on stdout.
	out = yukta(t, srv.URL, "run", "dly/hold", "--payload", tenItems, "--watch", "-o", "json")
	var ended struct {
		Status string
		Result any
	}
	if out.code != 0 || json.Unmarshal([]byte(out.stdout), &ended) != nil || ended.Status != "SUCCESS" {
		t.Fatalf("run --watch -o json: want exit 0 and the ended run as JSON on stdout\n%s", out)
	}
	if !regexp.MustCompile(`node wait DELAY [A-Z]+ received=0 emitted=0 \(holding 10`).MatchString(out.stderr) {
		t.Errorf("the watch does not show what the DELAY holds\n%s", out)
	}

	// On a terminal (a pty), the elapsed time moves while the DELAY waits.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-c", "import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)",
		binary(t), "run", "dly/hold", "--payload", tenItems, "--watch")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "YUKTA_SERVER=" + srv.URL, "TERM=xterm"}
	tty, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run --watch on a pty: %v\n%s", err, tty)
	}
	header := regexp.MustCompile(`dly/hold  \S+  RUNNING  (\S+)`)
	var longest time.Duration
	for _, m := range header.FindAllStringSubmatch(string(tty), -1) {
		if d, err := time.ParseDuration(m[1]); err == nil && d > longest {
			longest = d
		}
	}
	if longest < 1500*time.Millisecond {
		t.Fatalf("on a terminal the last RUNNING header read %s: the elapsed time did not move while the DELAY waited 3 s\n%q", longest, tty)
	}
	if !strings.Contains(string(tty), "holding 10") {
		t.Errorf("the terminal table does not show what the DELAY holds\n%q", tty)
	}
}
