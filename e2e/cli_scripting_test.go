package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// yamSession is a session written as YAML: a workflow that fails, and one
// that waits for an answer checked by a schema.
const yamSession = `# applied by yukta apply, converted to JSON on the way
sessionId: yam
name: YAML session
workflows:
  - workflowId: fail
    nodes:
      - {nodeId: start, type: MANUAL}
      - {nodeId: boom, type: FAIL, config: {message: disk on fire}}
    edges:
      - {source: start, target: boom}
  - workflowId: wait
    nodes:
      - {nodeId: start, type: MANUAL}
      - nodeId: ask
        type: INPUT_REQUEST
        config:
          prompt: How many?
          mode: answer
          schema: {type: object, properties: {n: {type: integer}}}
      - {nodeId: out, type: RESULT}
    edges:
      - {source: start, target: ask}
      - {source: ask, target: out}
`

// approverSupervisor parks every STOP on session yam for an ADMIN's approval.
const approverSupervisor = `id: approver
name: Approver
owns: [session:yam]
engine:
  type: rules
  settings:
    schemaVersion: 1
    rules:
      - id: ask-a-person
        requireApproval: {command: StopWorkflow, reason: a person decides stops}
`

// watcher is a run --watch in the background.
type watcher struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

func startWatch(t *testing.T, url string, args ...string) *watcher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	w := &watcher{cmd: cliCmd(t, ctx, url, args...), out: &syncBuffer{}, done: make(chan error, 1)}
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.done <- w.cmd.Wait() }()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.done
	})
	return w
}

// await waits until the output matches re and returns the submatches.
func (w *watcher) await(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(w.out.String()); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch never printed %s\n%s", re, w.out.String())
		}
	}
}

// exit waits for the watch to end and returns its exit code.
func (w *watcher) exit(t *testing.T) int {
	t.Helper()
	select {
	case err := <-w.done:
		w.done <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatalf("the watch did not end\n%s", w.out.String())
		return -1
	}
}

var (
	idLine   = regexp.MustCompile(`(?m)^execution: (\S+)$`)
	hintLine = regexp.MustCompile(`(?m)^answer (\S+): (yukta answer (\S+) '(.*)')$`)
)

// TestCLIScripting is the scriptable CLI through the real binary: every
// read command's -o json is the REST answer to the same call and -o jsonl
// has one line per item; YAML documents apply; a WAITING input in run
// --watch prints the answer command, which works as printed; completion
// scripts load; each exit code of the table comes out where it should.
func TestCLIScripting(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	url := s.URL
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	cliWant(t, yukta(t, url, "apply", "../examples/hello.json"), 0, "action: created\n")
	cliWant(t, yukta(t, url, "apply", write("yam.yaml", yamSession)), 0, "session: yam\n", "workflow: fail\n", "workflow: wait\n")
	cliWant(t, yukta(t, url, "supervisors", "apply", write("approver.yml", approverSupervisor)), 0, "supervisor: approver\n", "owns: session:yam\n")
	cliWant(t, yukta(t, url, "supervisors", "apply", write("agent.json", `{"id":"agent","name":"Agent","engine":{"type":"http","settings":{}},"owns":["session:other"]}`)), 0)
	cliWant(t, yukta(t, url, "supervisors", "credential", "create", "agent"), 0, "action: issued\n")

	ok := yukta(t, url, "run", "hello/greet", "--payload", `{"name":"Ada"}`, "--watch")
	cliWant(t, ok, 0, "status: SUCCESS\n")
	eid := cliField(t, ok, "execution")

	t.Run("exit codes", func(t *testing.T) {
		cliWant(t, yukta(t, url, "status", "hello", eid), 0)
		if out := yukta(t, url, "status", "ghost"); out.code != 1 || !strings.Contains(out.stderr, "404") {
			t.Errorf("refused: want exit 1\n%s", out)
		}
		for _, args := range [][]string{{"status"}, {"sessions", "show"}, {"runs", "list", "hello", "--limit", "x"},
			{"sessions", "list", "--cursor", "c", "--all"}, {"status", "hello", "-o", "yaml"}, {"frobnicate"}, {"sessions"}} {
			out := yukta(t, url, args...)
			if out.code != 2 || !strings.Contains(out.stderr, "' for help.") || out.stdout != "" {
				t.Errorf("usage error %v: want exit 2 naming the help\n%s", args, out)
			}
		}
		if out := yukta(t, url, "sessions", "show"); !strings.Contains(out.stderr, "want SESSION") || !strings.Contains(out.stderr, "yukta sessions show -h") {
			t.Errorf("a missing argument names it and the help\n%s", out)
		}
		if out := yukta(t, url, "status", "hello", "-o", "yaml"); !strings.Contains(out.stderr, `-o "yaml": want table, json or jsonl`) {
			t.Errorf("a bad -o names the flag and the choices\n%s", out)
		}

		export := yukta(t, url, "journal", "export", "hello", eid)
		cliWant(t, export, 0)
		file := write("run.ndjson", export.stdout)
		cliWant(t, yukta(t, url, "journal", "verify", file), 3, "result: UNANCHORED")

		failed := yukta(t, url, "run", "yam/fail", "--watch")
		cliWant(t, failed, 4, "status: FAILURE\n")

		// STOPPED: a watched order waits for its approval, then is killed.
		w := startWatch(t, url, "run", "hello/orders", "--payload", `{"amount":900}`, "--watch")
		w.await(t, hintLine)
		id := w.await(t, idLine)[1]
		cliWant(t, yukta(t, url, "control", "hello", id, "STOP", "--mode", "kill"), 0, "status: applied\n")
		if code := w.exit(t); code != 5 || !strings.Contains(w.out.String(), "\nstatus: STOPPED\n") {
			t.Errorf("a stopped run: exit %d, want 5\n%s", code, w.out.String())
		}

		if out := yukta(t, "http://127.0.0.1:1", "sessions", "list"); out.code != 6 || !strings.Contains(out.stderr, "cannot reach") {
			t.Errorf("unreachable: want exit 6\n%s", out)
		}

		// Ctrl-C leaves the watch, not the run.
		w = startWatch(t, url, "run", "yam/wait", "--watch")
		w.await(t, hintLine)
		if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := w.exit(t); code != 130 || !strings.Contains(w.out.String(), "stopped watching; the execution continues") {
			t.Errorf("interrupted: exit %d, want 130\n%s", code, w.out.String())
		}
	})

	t.Run("a WAITING input prints the answer command, which works as printed", func(t *testing.T) {
		w := startWatch(t, url, "run", "hello/orders", "--payload", `{"amount":500}`, "--watch")
		m := w.await(t, hintLine)
		id := w.await(t, idLine)[1]
		if m[1] != "approve" || m[4] != `{"approved": true, "comment": ""}` {
			t.Errorf("approval hint %q", m[0])
		}
		inputs := yukta(t, url, "inputs", "hello", "--execution", id, "-o", "jsonl")
		var in struct{ InputId, NodeId, Status string }
		if err := json.Unmarshal([]byte(inputs.stdout), &in); err != nil || in.InputId != m[3] || in.Status != "open" {
			t.Fatalf("the hint names input %s; the inputs are %s (%v)", m[3], inputs, err)
		}
		// Through a shell, as a person would paste it.
		sh := exec.Command("sh", "-c", strings.Replace(m[2], "yukta", binary(t), 1))
		sh.Env = []string{"PATH=" + os.Getenv("PATH"), "YUKTA_SERVER=" + url}
		if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), "status: answered") {
			t.Fatalf("the printed command: %v\n%s", err, out)
		}
		if code := w.exit(t); code != 0 || !strings.Contains(w.out.String(), "\nstatus: SUCCESS\n") {
			t.Errorf("the answered run: exit %d\n%s", code, w.out.String())
		}

		// An answer-mode input with a schema gets an object of its fields.
		w = startWatch(t, url, "run", "yam/wait", "--watch")
		if m := w.await(t, hintLine); m[1] != "ask" || m[4] != `{"n": 0}` {
			t.Errorf("answer-mode hint %q", m[0])
		}
		cliWant(t, yukta(t, url, "answer", w.await(t, hintLine)[3], `{"n": 7}`), 0)
		if code := w.exit(t); code != 0 {
			t.Errorf("exit %d\n%s", code, w.out.String())
		}
	})

	// A STOP the approver holds, for the approvals commands.
	held := startWatch(t, url, "run", "yam/wait", "--watch")
	held.await(t, hintLine)
	heldID := held.await(t, idLine)[1]
	ticket := yukta(t, url, "control", "yam", heldID, "STOP")
	cliWant(t, ticket, 0, "status: review\n")
	rid := cliField(t, ticket, "review")
	// Everything settles before the comparisons: no run is in flight but
	// the held one, whose STOP waits.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st, b, _ := call(t, s, "GET", "/api/approvals/"+rid, "", nil)
		if st == 200 && strings.Contains(string(b), `"AWAITING_APPROVAL"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the STOP never waited for approval: %d %s", st, b)
		}
	}

	t.Run("-o json is the REST answer; -o jsonl one line per item", func(t *testing.T) {
		for _, c := range []struct {
			args    []string
			path    string
			listKey string // "" for an object
		}{
			{[]string{"status", "hello"}, "/api/sessions/hello/executions?limit=20", "executions"},
			{[]string{"status", "hello", eid}, "/api/sessions/hello/executions/" + eid, ""},
			{[]string{"logs", "hello", eid}, "/api/sessions/hello/executions/" + eid + "/logs?tailLines=100", "lines"},
			{[]string{"logs", "hello", eid, "-n", "2", "--grep", "greeted"}, "/api/sessions/hello/executions/" + eid + "/logs?tailLines=2&filterPattern=greeted", "lines"},
			{[]string{"inputs"}, "/api/inputs", "inputs"},
			{[]string{"inputs", "hello", "--all"}, "/api/inputs?sessionId=hello&status=all", "inputs"},
			{[]string{"sessions", "list"}, "/api/sessions", "sessions"},
			{[]string{"sessions", "list", "--limit", "1"}, "/api/sessions?limit=1", "sessions"},
			{[]string{"sessions", "show", "yam"}, "/api/sessions/yam", ""},
			{[]string{"workflows", "show", "hello/orders"}, "/api/sessions/hello/workflows/orders", ""},
			{[]string{"runs", "list", "hello"}, "/api/sessions/hello/executions", "executions"},
			{[]string{"runs", "list", "hello", "--workflow", "orders", "--status", "stopped", "--limit", "5"}, "/api/sessions/hello/executions?workflowId=orders&status=STOPPED&limit=5", "executions"},
			{[]string{"plugins", "list"}, "/api/plugins", "plugins"},
			{[]string{"plugins", "show", "INPUT_REQUEST"}, "/api/plugins/INPUT_REQUEST", ""},
			{[]string{"supervisors", "list"}, "/api/supervisors", "supervisors"},
			{[]string{"supervisors", "show", "approver"}, "/api/supervisors/approver", ""},
			{[]string{"supervisors", "credential", "show", "agent"}, "/api/supervisors/agent/credential", ""},
			{[]string{"approvals", "list"}, "/api/approvals", "reviews"},
			{[]string{"approvals", "list", "--status", "ALL"}, "/api/approvals?status=ALL", "reviews"},
			{[]string{"approvals", "show", rid}, "/api/approvals/" + rid, ""},
		} {
			st, body, _ := call(t, s, "GET", c.path, "", nil)
			if st != 200 {
				t.Fatalf("GET %s: %d %s", c.path, st, body)
			}
			want := decodeJSON(t, body)
			out := yukta(t, url, append(c.args, "-o", "json")...)
			if out.code != 0 {
				t.Fatalf("yukta %v -o json\n%s", c.args, out)
			}
			if got := decodeJSON(t, []byte(out.stdout)); !reflect.DeepEqual(got, want) {
				t.Errorf("yukta %v -o json is not GET %s:\n got %s\nwant %s", c.args, c.path, out.stdout, body)
			}

			out = yukta(t, url, append(c.args, "--output=jsonl")...)
			lines := strings.Split(strings.TrimSuffix(out.stdout, "\n"), "\n")
			items := []any{want}
			if c.listKey != "" {
				items = want.(map[string]any)[c.listKey].([]any)
				if len(items) == 0 {
					lines = nil
					if out.stdout != "" {
						t.Errorf("yukta %v -o jsonl of an empty list printed %q", c.args, out.stdout)
					}
				}
			}
			if out.code != 0 || len(lines) != len(items) {
				t.Errorf("yukta %v -o jsonl: %d lines, want %d\n%s", c.args, len(lines), len(items), out)
				continue
			}
			for i, l := range lines {
				if got := decodeJSON(t, []byte(l)); !reflect.DeepEqual(got, items[i]) {
					t.Errorf("yukta %v -o jsonl line %d: %s, want item %v", c.args, i, l, items[i])
				}
			}
		}
	})

	t.Run("runs list pages with --cursor and --all", func(t *testing.T) {
		_, body, _ := call(t, s, "GET", "/api/sessions/hello/executions", "", nil)
		all := decodeJSON(t, body).(map[string]any)["executions"].([]any)
		if len(all) < 3 {
			t.Fatalf("want at least 3 runs of hello, have %d", len(all))
		}
		first := yukta(t, url, "runs", "list", "hello", "--limit", "2")
		cliWant(t, first, 0, "EXECUTION")
		m := regexp.MustCompile(`more: --cursor (\S+) \(or --all\)`).FindStringSubmatch(first.stderr)
		if m == nil {
			t.Fatalf("the table does not print the next cursor\n%s", first)
		}
		next := yukta(t, url, "runs", "list", "hello", "--limit", "2", "--cursor", m[1], "-o", "jsonl")
		cliWant(t, next, 0)
		paged := yukta(t, url, "runs", "list", "hello", "--limit", "1", "--all", "-o", "json")
		cliWant(t, paged, 0)
		got := decodeJSON(t, []byte(paged.stdout)).(map[string]any)
		if !reflect.DeepEqual(got["executions"], all) || got["nextCursor"] != nil {
			t.Errorf("--all pages one by one: got %s\nwant the %d of %s", paged.stdout, len(all), body)
		}
		lines := strings.Split(strings.TrimSpace(next.stdout), "\n")
		if len(lines) != min(2, len(all)-2) || !reflect.DeepEqual(decodeJSON(t, []byte(lines[0])), all[2]) {
			t.Errorf("the second page:\n%s\nwant from %v", next.stdout, all[2])
		}
	})

	t.Run("tables", func(t *testing.T) {
		cliWant(t, yukta(t, url, "sessions", "list"), 0, "SESSION", "hello", "yam")
		cliWant(t, yukta(t, url, "sessions", "show", "hello"), 0, "session: hello\n", "name: Hello, Yukta\n", "WORKFLOW", "greet", "orders")
		cliWant(t, yukta(t, url, "workflows", "show", "hello/orders"), 0, "workflow: orders\n", "NODE", "approve", "INPUT_REQUEST", "SOURCE")
		cliWant(t, yukta(t, url, "plugins", "list"), 0, "TYPE", "INPUT_REQUEST", "ROUTER")
		cliWant(t, yukta(t, url, "plugins", "show", "ROUTER"), 0, "type: ROUTER\n", "FIELD", "routes")
		cliWant(t, yukta(t, url, "runs", "list", "yam", "--status", "FAILURE"), 0, "fail")
		if out := yukta(t, url, "workflows", "show", "hello"); out.code != 2 || !strings.Contains(out.stderr, "SESSION/WORKFLOW") {
			t.Errorf("workflows show without the workflow\n%s", out)
		}
	})

	t.Run("sessions delete", func(t *testing.T) {
		doc := strings.Replace(yamSession, "sessionId: yam", "sessionId: gone", 1)
		cliWant(t, yukta(t, url, "apply", write("gone.yaml", doc)), 0, "session: gone\n")
		cliWant(t, yukta(t, url, "sessions", "delete", "gone"), 0, "action: deleted\n")
		if out := yukta(t, url, "sessions", "show", "gone"); out.code != 1 || !strings.Contains(out.stderr, "404") {
			t.Errorf("a deleted session\n%s", out)
		}
	})

	t.Run("completion scripts", func(t *testing.T) {
		for _, shell := range []string{"bash", "zsh", "fish"} {
			out := yukta(t, url, "completion", shell)
			if out.code != 0 || !strings.Contains(out.stdout, "yukta") {
				t.Fatalf("completion %s\n%s", shell, out)
			}
			if shell == "bash" {
				check := exec.Command("bash", "-n")
				check.Stdin = strings.NewReader(out.stdout)
				if b, err := check.CombinedOutput(); err != nil {
					t.Fatalf("bash -n: %v\n%s", err, b)
				}
			}
		}
		src := exec.Command("bash", "-c", `source <("$0" completion bash); complete -p yukta`, binary(t))
		if b, err := src.CombinedOutput(); err != nil || !strings.Contains(string(b), "__start_yukta") {
			t.Fatalf("sourcing the bash completion: %v\n%s", err, b)
		}
		// Dynamic completion asks the server for session ids.
		out := yukta(t, url, "__complete", "status", "h")
		if out.code != 0 || !strings.Contains(out.stdout, "hello\tHello, Yukta") {
			t.Errorf("session ids complete\n%s", out)
		}
		out = yukta(t, url, "__complete", "run", "hello/")
		if !strings.Contains(out.stdout, "hello/greet") || !strings.Contains(out.stdout, "hello/orders") {
			t.Errorf("SESSION/WORKFLOW completes\n%s", out)
		}
	})

	// The held run's STOP is rejected; the run goes on to its answer.
	cliWant(t, yukta(t, url, "approvals", "reject", rid, "--reason", "not now"), 0, "status: DENIED\n")
	_ = held.cmd.Process.Kill()
}

// decodeJSON parses one JSON value with exact numbers.
func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value\n%s", b)
	}
	return v
}
