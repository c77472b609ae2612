package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// The keys of the key file tests.
const (
	kfAdmin   = "kf-admin-secret-0123456789abcdef"
	kfOps     = "kf-ops-secret-0123456789abcdef"
	kfWatcher = "kf-watcher-secret-0123456789abcdef"
	kfPoller  = "kf-poller-secret-0123456789abcdef"
	kfAgent   = "kf-agent-secret-0123456789abcdef"
	kfNarrow  = "kf-narrow-secret-0123456789abcdef"
)

// keyFileGoneWithin is how soon, at most, a key removed from the key file
// must be refused: "within a few seconds" (issue 22).
const keyFileGoneWithin = 5 * time.Second

// writeKeys replaces the key file as an editor or a ConfigMap does: a new
// file renamed over the old one.
func writeKeys(t *testing.T, path string, lines ...string) time.Time {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// statusWith is the status GET /api/sessions answers key.
func statusWith(t *testing.T, s *server, key string) int {
	t.Helper()
	st, _, _ := call(t, s, "GET", "/api/sessions", key, nil)
	return st
}

// untilStatus polls GET /api/sessions with key until it answers want, and
// returns how long that took after since; it fails after keyFileGoneWithin.
func untilKeyStatus(t *testing.T, s *server, key string, want int, since time.Time) time.Duration {
	t.Helper()
	for {
		if statusWith(t, s, key) == want {
			return time.Since(since)
		}
		if time.Since(since) > keyFileGoneWithin {
			t.Fatalf("GET /api/sessions did not answer %d within %s of the key file change (answers %d)", want, keyFileGoneWithin, statusWith(t, s, key))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// untilLog waits until the server log has a line holding every one of
// parts, and returns that line.
func untilLog(t *testing.T, s *server, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(keyFileGoneWithin)
	for {
		for _, l := range strings.Split(s.logs.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line holds all of %q within %s", parts, keyFileGoneWithin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKeyFileReloadsWithoutRestart edits the key file of a running server:
// a key added works, a key removed is refused within a few seconds, a
// malformed or missing file keeps the last good keys and the log says why
// (without a secret), and SIGHUP re-reads the file at once.
func TestKeyFileReloadsWithoutRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, path, "admin ADMIN "+kfAdmin)
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: []string{"YUKTA_API_KEYS=" + path}})
	if st := statusWith(t, s, kfAdmin); st != http.StatusOK {
		t.Fatalf("admin key: %d", st)
	}
	if st := statusWith(t, s, kfOps); st != http.StatusUnauthorized {
		t.Fatalf("ops key before it is in the file: %d", st)
	}

	// Added in place (not renamed): the server sees it without a restart.
	at := time.Now()
	if err := os.WriteFile(path, []byte("admin ADMIN "+kfAdmin+"\nops OPERATOR "+kfOps+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The log says when it is in force; the key is tried only then, since a
	// wrong key sent again and again spends its failure budget.
	untilLog(t, s, "key file reloaded", `"added":["ops"]`)
	t.Logf("a key added to the file was in force %d ms after the write", time.Since(at).Milliseconds())
	if st := statusWith(t, s, kfOps); st != http.StatusOK {
		t.Fatalf("ops key once added: %d", st)
	}

	// Removed by a rename over the file: refused within a few seconds.
	at = writeKeys(t, path, "admin ADMIN "+kfAdmin)
	t.Logf("a key removed from the file was refused %d ms after the change", untilKeyStatus(t, s, kfOps, http.StatusUnauthorized, at).Milliseconds())
	untilLog(t, s, "key file reloaded", `"removed":["ops"]`)

	// Malformed: the last good set stays and the log names the line.
	writeKeys(t, path, "admin ADMIN "+kfAdmin, "ops OPERATR "+kfOps)
	line := untilLog(t, s, "key file refused", "line 2", "the last good keys stay")
	if strings.Contains(line, kfOps) || strings.Contains(line, kfAdmin) {
		t.Fatalf("the refusal quotes a secret: %s", line)
	}
	if st := statusWith(t, s, kfAdmin); st != http.StatusOK {
		t.Fatalf("admin key after a malformed file: %d, want the last good set", st)
	}
	if st := statusWith(t, s, kfOps); st != http.StatusUnauthorized {
		t.Fatalf("ops key of the malformed file: %d", st)
	}

	// Missing (unreadable): the same.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	untilLog(t, s, "key file unreadable", "the last good keys stay")
	if st := statusWith(t, s, kfAdmin); st != http.StatusOK {
		t.Fatalf("admin key with the file gone: %d, want the last good set", st)
	}
	writeKeys(t, path, "admin ADMIN "+kfAdmin)

	// SIGHUP re-reads at once, and the server stays up.
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	untilLog(t, s, "key file", `"trigger":"SIGHUP"`)
	if st := statusWith(t, s, kfAdmin); st != http.StatusOK {
		t.Fatalf("admin key after SIGHUP: %d", st)
	}
	if strings.Contains(s.logs.String(), kfOps) || strings.Contains(s.logs.String(), kfAdmin) {
		t.Fatal("the server log holds a secret of the key file")
	}
	// A bad file is logged once, not at every poll.
	refused, unreadable := 0, 0
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, "key file refused") && strings.Contains(l, "line 2") {
			refused++
		}
		if strings.Contains(l, "key file unreadable") {
			unreadable++
		}
	}
	if refused != 1 || unreadable != 1 {
		t.Fatalf("the malformed file was logged %d times and the missing one %d times, want once each", refused, unreadable)
	}
}

// TestStreamsEndWhenTheirKeyGoes opens an event stream, a long poll (a
// start with wait on a run that waits for an input) and an MCP call (the
// same, with waitSeconds) with keys of the key file, removes those keys from
// the file, and sees the stream end with an `event: error` saying why, and
// the long poll and the MCP call answered 401; a stream whose key is

// streamEnded is how an event stream ended: when, and its last two lines.
type streamEnded struct {
	at   time.Time
	last string
}

// eventStream opens GET /api/events on s with key (it must answer 200) and
// reads it in the background until it ends; the channel then says how.
func eventStream(t *testing.T, ctx context.Context, s *server, key string) <-chan streamEnded {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/events: %d", res.StatusCode)
	}
	end := make(chan streamEnded, 1)
	go func() {
		var last []string
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if l := sc.Text(); l != "" {
				last = append(last, l)
				if len(last) > 2 {
					last = last[1:]
				}
			}
		}
		end <- streamEnded{at: time.Now(), last: strings.Join(last, "\n")}
	}()
	return end
}

// narrowed to a session list ends too.
func TestStreamsEndWhenTheirKeyGoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	all := []string{"admin ADMIN " + kfAdmin, "watcher VIEWER " + kfWatcher, "poller OPERATOR " + kfPoller, "agent OPERATOR " + kfAgent, "narrow VIEWER " + kfNarrow}
	writeKeys(t, path, all...)
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: []string{"YUKTA_API_KEYS=" + path}})
	e := &env{t: t, s: s, c: keyedClient(t, s, kfAdmin), ctx: context.Background()}
	e.apply("ks", wf("ask", []string{nd("start", "MANUAL", ""), nd("ask", "INPUT_REQUEST", `{"prompt":"Ship it?","mode":"approval"}`)},
		[]string{ed("start", "ask", "")}))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type ended struct {
		at     time.Time
		status int
		body   []byte
	}
	// The event streams: one whose key goes, one whose key is narrowed to
	// a session list (the same secret).
	streamEnd, narrowEnd := eventStream(t, ctx, s, kfWatcher), eventStream(t, ctx, s, kfNarrow)
	// The long poll.
	pollEnd := make(chan ended, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/api/sessions/ks/workflows/ask/executions", bytes.NewReader([]byte(`{"wait":60}`)))
		req.Header.Set("Authorization", "Bearer "+kfPoller)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			pollEnd <- ended{at: time.Now(), status: -1, body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		pollEnd <- ended{at: time.Now(), status: res.StatusCode, body: b.Bytes()}
	}()
	// The MCP call.
	cs := mustConnect(t, s.URL, kfAgent)
	mcpEnd := make(chan ended, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_workflow", Arguments: map[string]any{"sessionId": "ks", "workflowId": "ask", "waitSeconds": 60}})
		if err != nil {
			mcpEnd <- ended{at: time.Now(), body: []byte(err.Error())}
			return
		}
		b, _ := json.Marshal(res)
		mcpEnd <- ended{at: time.Now(), status: http.StatusOK, body: b}
	}()
	// All are open once both runs wait for their input.
	deadline := time.Now().Add(waitLimit)
	for {
		st, b, _ := call(t, s, "GET", "/api/inputs?sessionId=ks", kfAdmin, nil)
		if st == http.StatusOK && strings.Count(string(b), "Ship it?") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run asks nothing: %d %s", st, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case e := <-streamEnd:
		t.Fatalf("the stream ended before its key was removed: %s", e.last)
	case e := <-pollEnd:
		t.Fatalf("the long poll ended before its key was removed: %d %s", e.status, e.body)
	case e := <-mcpEnd:
		t.Fatalf("the MCP call ended before its key was removed: %s", e.body)
	case e := <-narrowEnd:
		t.Fatalf("the stream ended before its key was narrowed: %s", e.last)
	default:
	}

	at := writeKeys(t, path, all[0], "narrow VIEWER sessions=ks "+kfNarrow)
	for range 4 {
		select {
		case e := <-streamEnd:
			t.Logf("the event stream ended %d ms after its key was removed from the file", e.at.Sub(at).Milliseconds())
			if !strings.Contains(e.last, "event: error") || !strings.Contains(e.last, `"status":401`) || !strings.Contains(e.last, "no longer valid") {
				t.Fatalf("the stream's last record does not say its key is no longer valid:\n%s", e.last)
			}
		case e := <-pollEnd:
			t.Logf("the long poll answered %d, %d ms after its key was removed from the file", e.status, e.at.Sub(at).Milliseconds())
			var p struct {
				Status int    `json:"status"`
				Detail string `json:"detail"`
			}
			if e.status != http.StatusUnauthorized || json.Unmarshal(e.body, &p) != nil || p.Status != http.StatusUnauthorized || !strings.Contains(p.Detail, "no longer valid") {
				t.Fatalf("the long poll answered %d %s, want 401 saying the key is no longer valid", e.status, e.body)
			}
		case e := <-narrowEnd:
			t.Logf("the event stream of the narrowed key ended %d ms after the change", e.at.Sub(at).Milliseconds())
			if !strings.Contains(e.last, "event: error") || !strings.Contains(e.last, `"status":401`) || !strings.Contains(e.last, "changed") {
				t.Fatalf("the narrowed stream's last record does not say its key changed:\n%s", e.last)
			}
		case e := <-mcpEnd:
			t.Logf("the MCP call ended %d ms after its key was removed from the file: %s", e.at.Sub(at).Milliseconds(), e.body)
			// The HTTP answer is 401, or, when the SDK wrote the call's
			// answer first, a JSON-RPC error saying the same.
			if e.status != 0 || !strings.Contains(string(e.body), "Unauthorized") && !strings.Contains(string(e.body), "no longer valid") {
				t.Fatalf("the MCP call ended with %d %s, want a 401 or an error saying the key is no longer valid", e.status, e.body)
			}
		case <-time.After(keyFileGoneWithin):
			t.Fatalf("the event stream, the long poll or the MCP call is still open %s after its key was removed", keyFileGoneWithin)
		}
	}
	// One warning per request, not a storm: the access log's 401s.
	if n := strings.Count(s.logs.String(), `"status":499`); n != 0 {
		t.Fatalf("%d requests logged as 499", n)
	}
}
