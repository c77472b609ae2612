package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// cliOut is what one run of the yukta client printed.
type cliOut struct {
	stdout, stderr string
	code           int
}

func (o cliOut) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", o.code, o.stdout, o.stderr)
}

// cliCmd builds the real binary's command with YUKTA_SERVER pointing at url.
func cliCmd(t *testing.T, ctx context.Context, url string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "YUKTA_SERVER=" + url}
	return cmd
}

// yukta runs the client to completion (at most a minute).
func yukta(t *testing.T, url string, args ...string) cliOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := cliCmd(t, ctx, url, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := cliOut{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		out.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("yukta %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("yukta %s did not finish within a minute\n%s", strings.Join(args, " "), out)
	}
	return out
}

// cliField returns the value of the first `key: value` line.
func cliField(t *testing.T, out cliOut, key string) string {
	t.Helper()
	for l := range strings.Lines(out.stdout) {
		if v, ok := strings.CutPrefix(strings.TrimRight(l, "\n"), key+": "); ok {
			return v
		}
	}
	t.Fatalf("no %q line in the output\n%s", key, out)
	return ""
}

func cliWant(t *testing.T, out cliOut, code int, stdout ...string) {
	t.Helper()
	if out.code != code {
		t.Fatalf("exit %d, want %d\n%s", out.code, code, out)
	}
	for _, s := range stdout {
		if !strings.Contains(out.stdout, s) {
			t.Fatalf("stdout lacks %q\n%s", s, out)
		}
	}
}

func TestCLI(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	url := s.URL

	t.Run("help lists the client commands", func(t *testing.T) {
		out := yukta(t, url, "help")
		cliWant(t, out, 0, "yukta apply FILE", "yukta run SESSION/WORKFLOW", "yukta status", "yukta logs", "yukta control",
			"yukta stop-all", "yukta inputs", "yukta answer", "YUKTA_SERVER")
	})

	// apply: created, then replaced.
	out := yukta(t, url, "apply", "../examples/hello.json")
	cliWant(t, out, 0, "session: hello\n", "action: created\n", "workflow: greet\n", "workflow: orders\n")
	out = yukta(t, url, "apply", "../examples/hello.json")
	cliWant(t, out, 0, "action: replaced\n")

	t.Run("apply lists every violation and exits 1", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.json")
		doc := `{"sessionId":"broken","name":"Broken","workflows":[{"workflowId":"w","nodes":[
			{"nodeId":"a","type":"NO_SUCH_TYPE"},{"nodeId":"b","type":"MANUAL","colour":"red"}],
			"edges":[{"source":"b","target":"ghost"}]}]}`
		if err := os.WriteFile(bad, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		out := yukta(t, url, "apply", bad)
		cliWant(t, out, 1)
		for _, want := range []string{
			"\nworkflows[0].nodes[0].type: ",
			"\nworkflows[0].nodes[1].colour: ",
			"\nworkflows[0].edges[0].target: ",
			"3 problems found",
		} {
			if !strings.Contains(out.stderr, want) {
				t.Errorf("stderr lacks %q\n%s", want, out)
			}
		}
		if got := yukta(t, url, "status", "broken"); got.code != 1 || !strings.Contains(got.stderr, "404") {
			t.Errorf("the invalid session was stored?\n%s", got)
		}
	})

	// run --watch: per-node progress, then the result.
	out = yukta(t, url, "run", "hello/greet", "--payload", `{"name":"Ada"}`, "--watch")
	cliWant(t, out, 0, "\nstatus: SUCCESS\n", `result: {"greeting":"Hello, Ada!"}`,
		"node greet TRANSFORM SUCCESS received=1 emitted=1\n", "node log LOG SUCCESS received=1 emitted=1\n", "execution SUCCESS\n")
	eid := cliField(t, out, "execution")

	t.Run("status", func(t *testing.T) {
		out := yukta(t, url, "status", "hello")
		cliWant(t, out, 0, "EXECUTION", eid)
		if !regexp.MustCompile(`(?m)^` + eid + `\s+greet\s+SUCCESS\s`).MatchString(out.stdout) {
			t.Errorf("history row missing\n%s", out)
		}
		out = yukta(t, url, "status", "hello", eid)
		cliWant(t, out, 0, "execution: "+eid+"\n", "status: SUCCESS\n", "channel: cli (claimed)\n", `result: {"greeting":"Hello, Ada!"}`)
		if !regexp.MustCompile(`(?m)^log\s+LOG\s+SUCCESS\s+1\s+1\s`).MatchString(out.stdout) {
			t.Errorf("node table row missing\n%s", out)
		}
		out = yukta(t, url, "status", "hello", "00000000-0000-0000-0000-000000000000")
		if out.code != 1 || !strings.Contains(out.stderr, "404") {
			t.Errorf("unknown execution\n%s", out)
		}
	})

	t.Run("logs", func(t *testing.T) {
		logLine := regexp.MustCompile(`(?m)^\d+ \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info log greeted someone$`)
		out := yukta(t, url, "logs", "hello", eid)
		cliWant(t, out, 0)
		if !logLine.MatchString(out.stdout) {
			t.Errorf("the LOG node's line is missing\n%s", out)
		}
		out = yukta(t, url, "logs", "hello", eid, "-f", "-n", "5")
		if out.code != 0 || !logLine.MatchString(out.stdout) {
			t.Errorf("-f on an ended execution prints the tail and returns\n%s", out)
		}
		out = yukta(t, url, "logs", "hello", eid, "--grep", "no such text")
		if out.code != 0 || out.stdout != "" {
			t.Errorf("--grep with no match prints nothing\n%s", out)
		}
		out = yukta(t, url, "logs", "hello", eid, "--grep", "(")
		if out.code != 1 || !strings.Contains(out.stderr, "filterPattern: ") {
			t.Errorf("a bad pattern shows the server's violation\n%s", out)
		}
	})

	t.Run("control, inputs and answer", func(t *testing.T) {
		// An order over 100 parks at the approval: the run stays active.
		out := yukta(t, url, "run", "hello/orders", "--payload", `{"amount":500}`)
		cliWant(t, out, 0)
		eid := cliField(t, out, "execution")

		out = yukta(t, url, "control", "hello", eid, "PAUSE", "--reason", "a look first")
		cliWant(t, out, 0, "status: applied\n")
		if m := cliField(t, out, "message"); !strings.Contains(m, "paused") {
			t.Errorf("PAUSE message %q", m)
		}
		cliField(t, out, "command")
		out = yukta(t, url, "control", "hello", eid, "RESUME")
		cliWant(t, out, 0, "status: applied\n")

		out = yukta(t, url, "control", "hello", eid, "TELEPORT")
		if out.code != 1 || !strings.Contains(out.stderr, "body.action: ") || !strings.Contains(out.stderr, "RESTART_FROM_NODE") {
			t.Errorf("an unknown action exits 1 with the server's message\n%s", out)
		}
		out = yukta(t, url, "control", "hello", eid, "--node", "nowhere", "PAUSE")
		if out.code != 1 || !strings.Contains(out.stderr, "nowhere") {
			t.Errorf("an unknown node exits 1 naming it\n%s", out)
		}

		// The input appears once the approval node has parked the order.
		var id string
		deadline := time.Now().Add(15 * time.Second)
		for id == "" {
			out = yukta(t, url, "inputs", "hello")
			for l := range strings.Lines(out.stdout) {
				if f := strings.Fields(l); len(f) > 4 && f[2] == eid && f[3] == "approve" && f[4] == "open" {
					id = f[0]
				}
			}
			if id == "" && time.Now().After(deadline) {
				t.Fatalf("no open input for %s\n%s", eid, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
		out = yukta(t, url, "answer", id, `{"approved":true,"comment":"fine"}`)
		cliWant(t, out, 0, "status: answered\n", "execution: "+eid+"\n")
		out = yukta(t, url, "answer", id, `{"approved":true}`)
		if out.code != 1 || !strings.Contains(out.stderr, "409") {
			t.Errorf("answering twice\n%s", out)
		}
		for deadline = time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			out = yukta(t, url, "status", "hello", eid)
			if strings.Contains(out.stdout, "status: SUCCESS\n") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the approved order did not finish\n%s", out)
			}
		}
	})

	t.Run("run --watch exits 5 when the run is stopped", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := cliCmd(t, ctx, url, "run", "hello/orders", "--payload", `{"amount":900}`, "--watch")
		stdout := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = stdout, stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		waiting := regexp.MustCompile(`(?m)^node approve INPUT_REQUEST WAITING`)
		idLine := regexp.MustCompile(`(?m)^execution: (\S+)$`)
		for deadline := time.Now().Add(15 * time.Second); !waiting.MatchString(stdout.String()); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the watch did not show the approval waiting\n%s", stdout.String())
			}
		}
		eid := idLine.FindStringSubmatch(stdout.String())[1]
		out := yukta(t, url, "control", "hello", eid, "STOP", "--mode", "kill")
		cliWant(t, out, 0, "status: applied\n")
		select {
		case err := <-done:
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 5 || !strings.Contains(stdout.String(), "\nstatus: STOPPED\n") {
				t.Fatalf("watch ended with %v, want exit 5 and status STOPPED\n%s", err, stdout.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the watch did not end after STOP\n%s", stdout.String())
		}
		out = yukta(t, url, "stop-all", "hello", "orders", "--mode", "cancel")
		cliWant(t, out, 0, "status: applied\n")
	})

	t.Run("an unreachable server names the URL and the way out", func(t *testing.T) {
		out := yukta(t, "http://127.0.0.1:1", "status", "hello")
		if out.code != 6 || !strings.Contains(out.stderr, "http://127.0.0.1:1") || !strings.Contains(out.stderr, "yukta serve") ||
			!strings.Contains(out.stderr, "--server") {
			t.Errorf("connection failure\n%s", out)
		}
	})

	t.Run("bad arguments exit 2", func(t *testing.T) {
		for _, args := range [][]string{
			{"run", "hello"},
			{"run", "hello/greet", "--payload", "{not json"},
			{"status"},
			{"control", "hello", eid},
		} {
			if out := yukta(t, url, args...); out.code != 2 || out.stderr == "" {
				t.Errorf("yukta %v: %s", args, out)
			}
		}
	})
}
