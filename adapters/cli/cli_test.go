package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSSEReader(t *testing.T) {
	stream := ": hello\n\nid: 1\nevent: NodeStatusChanged\ndata: {\"a\":1}\n\n" +
		"id: 2\r\nevent: ExecutionStatusChanged\r\ndata: line one\r\ndata:line two\r\n\r\n" +
		"data: no id or event\n\nretry: 10\n\nid: 3\nevent: cut"
	r := newSSEReader(strings.NewReader(stream))
	type rec struct {
		ev      sseEvent
		comment bool
	}
	var got []rec
	for {
		ev, comment, err := r.next()
		if err != nil {
			if err != io.ErrUnexpectedEOF && err != io.EOF {
				t.Fatalf("err = %v", err)
			}
			break
		}
		got = append(got, rec{ev, comment})
	}
	want := []rec{
		{sseEvent{}, true},
		{sseEvent{ID: "1", Event: "NodeStatusChanged", Data: `{"a":1}`}, false},
		{sseEvent{ID: "2", Event: "ExecutionStatusChanged", Data: "line one\nline two"}, false},
		{sseEvent{ID: "2", Event: "message", Data: "no id or event"}, false},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n got %+v\nwant %+v", got, want)
	}
	if r.lastID != "3" {
		t.Fatalf("lastID = %q, want 3 (an id line counts even in a cut record)", r.lastID)
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcödé":     "plain text, ünïcödé",
		"two\nlines\r\tand tab":   `two\nlines\r\tand tab`,
		"\x1b[31mred\x1b[0m\x7f":  `\x1b[31mred\x1b[0m\x7f`,
		"c1 \u0085 bidi \u202e!":  `c1 \u0085 bidi \u202e!`,
		"bad utf8 \xff\xfe end":   `bad utf8 \xff\xfe end`,
		`back\slash stays as is`:  `back\slash stays as is`,
		"null\x00byte and \x01x":  `null\x00byte and \x01x`,
		"emoji 🙂 and CJK 漢字 fine": "emoji 🙂 and CJK 漢字 fine",
	} {
		if got := escape(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeServer records requests and answers from a handler.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newFake(t *testing.T, h http.HandlerFunc) *fakeServer {
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Clone(context.Background()))
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func run(t *testing.T, env map[string]string, cmd string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), cmd, args, &out, &errOut, func(k string) string { return env[k] })
	return out.String(), errOut.String(), code
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func TestHeadersAndFlagsAnywhere(t *testing.T) {
	var body atomic.Value
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body.Store(string(b))
		writeJSON(w, 200, map[string]any{"commandId": "c-1", "status": "applied", "resultExecutionIds": []string{"e-2"}, "message": "restarted"})
	})
	env := map[string]string{"YUKTA_SERVER": f.URL, "YUKTA_API_KEY": "s3cret"}
	// Flags before, between and after the positionals.
	out, errOut, code := run(t, env, "control", "--reason", "again", "s1", "e-1", "restart", "--key", "k-9", "--wait", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "command: c-1\nstatus: applied\nmessage: restarted\nnew-execution: e-2\n"; out != want {
		t.Fatalf("stdout = %q, want %q", out, want)
	}
	r := f.requests()[0]
	if r.URL.Path != "/api/sessions/s1/executions/e-1/control" || r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("Yukta-Channel") != "cli" {
		t.Fatalf("request %s %v", r.URL.Path, r.Header)
	}
	var got map[string]any
	_ = json.Unmarshal([]byte(body.Load().(string)), &got)
	if got["action"] != "RESTART" || got["reason"] != "again" || got["key"] != "k-9" || got["wait"] != 2.0 {
		t.Fatalf("body = %v", got)
	}

	// Node commands go to the node route; --server beats YUKTA_SERVER; no key, no header.
	_, errOut, code = run(t, map[string]string{"YUKTA_SERVER": "http://127.0.0.1:1"}, "control", "s1", "e-1", "--node", "fetch", "STOP", "--immediate", "--server", f.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r = f.requests()[1]
	if r.URL.Path != "/api/sessions/s1/executions/e-1/nodes/fetch/control" || r.Header.Get("Authorization") != "" {
		t.Fatalf("request %s %v", r.URL.Path, r.Header)
	}
	_ = json.Unmarshal([]byte(body.Load().(string)), &got)
	if got["action"] != "STOP" || got["immediate"] != true {
		t.Fatalf("body = %v", got)
	}

	// Flags that do not fit the scope are refused before any call.
	if _, errOut, code = run(t, env, "control", "s1", "e-1", "--node", "n", "STOP", "--mode", "KILL"); code != 2 || !strings.Contains(errOut, "--mode") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := len(f.requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestProblemsArePrinted(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"type":"urn:yukta:problem:invalid","title":"Invalid session","status":400,
			"detail":"2 problems found; see errors. Nothing was changed.",
			"errors":[{"path":"workflows[0].nodeId","message":"is required"},{"path":"name","message":"bad\nname"}]}`)
	})
	dir := t.TempDir()
	file := dir + "/s.json"
	if err := os.WriteFile(file, []byte(`{"sessionId":"s","name":"x","workflows":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, map[string]string{"YUKTA_SERVER": f.URL}, "apply", file)
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"400 Invalid session: 2 problems found", "\nworkflows[0].nodeId: is required\n", "\nname: bad\\nname\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if r := f.requests()[0]; r.Method != http.MethodPut || r.URL.Path != "/api/sessions/s" {
		t.Fatalf("%s %s", r.Method, r.URL.Path)
	}

	// Not a Yukta server at all.
	html := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(404)
		_, _ = io.WriteString(w, "<h1>nope</h1>")
	})
	_, errOut, code = run(t, map[string]string{"YUKTA_SERVER": html.URL}, "status", "s")
	if code != 1 || !strings.Contains(errOut, "is "+html.URL+" a Yukta server?") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

func TestConnectionFailureNamesTheURL(t *testing.T) {
	_, errOut, code := run(t, map[string]string{"YUKTA_SERVER": "127.0.0.1:1/"}, "inputs")
	if code != exitUnreachable || !strings.Contains(errOut, "at http://127.0.0.1:1:") || !strings.Contains(errOut, "yukta serve") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	_, errOut, code = run(t, map[string]string{"YUKTA_SERVER": "ftp://x"}, "inputs")
	if code != 2 || !strings.Contains(errOut, "not an http(s) URL") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestWatchResumesADroppedStream: the first stream drops after one event;
// the watch reconnects with Last-Event-ID and finishes on the second.
func TestWatchResumesADroppedStream(t *testing.T) {
	var status atomic.Value
	status.Store("RUNNING")
	var streams atomic.Int32
	lastIDs := make(chan string, 4)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost:
			writeJSON(w, 201, map[string]any{"executionId": "e-1", "status": "PENDING"})
		case strings.HasSuffix(r.URL.Path, "/events"):
			lastIDs <- r.Header.Get("Last-Event-ID")
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			if streams.Add(1) == 1 {
				fmt.Fprint(w, "id: 7\nevent: NodeStatusChanged\ndata: {}\n\n")
				return // dropped
			}
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
			status.Store("SUCCESS")
			fmt.Fprint(w, "id: 8\nevent: ExecutionStatusChanged\ndata: {}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			s := status.Load().(string)
			ex := map[string]any{"executionId": "e-1", "sessionId": "s", "workflowId": "w", "status": s, "actor": "anonymous",
				"channel": "cli", "startedAt": "2025-01-01T00:00:00Z", "nodes": []map[string]any{
					{"nodeId": "a", "type": "MANUAL", "status": map[bool]string{true: "SUCCESS", false: "RUNNING"}[s == "SUCCESS"],
						"received": 1, "emitted": 0, "paused": false, "stepMode": false, "skipped": false}}}
			if s == "SUCCESS" {
				ex["result"] = map[string]any{"ok": true}
				ex["endedAt"] = "2025-01-01T00:00:01Z"
			}
			writeJSON(w, 200, ex)
		}
	})
	out, errOut, code := run(t, map[string]string{"YUKTA_SERVER": f.URL}, "run", "s/w", "--watch", "--payload", `{"x":1}`)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if first, second := <-lastIDs, <-lastIDs; first != "" || second != "7" {
		t.Fatalf("Last-Event-ID %q then %q, want none then 7", first, second)
	}
	want := "execution: e-1\nexecution RUNNING\nnode a MANUAL RUNNING received=1 emitted=0\n" +
		"node a MANUAL SUCCESS received=1 emitted=0\nexecution SUCCESS\nstatus: SUCCESS\nduration: 1s\nresult: {\"ok\":true}\n"
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if !strings.Contains(errOut, "event stream lost") || !strings.Contains(errOut, "from event 7") || !strings.Contains(errOut, "back after") {
		t.Fatalf("stderr: %s", errOut)
	}
}

func TestRunExitCodes(t *testing.T) {
	for status, want := range map[string]int{"SUCCESS": exitOK, "FAILURE": exitRunFailed, "STOPPED": exitStopped} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				writeJSON(w, 201, map[string]any{"executionId": "e-1", "status": "PENDING"})
				return
			}
			writeJSON(w, 200, map[string]any{"executionId": "e-1", "sessionId": "s", "workflowId": "w", "status": status,
				"actor": "a", "channel": "cli", "startedAt": "2025-01-01T00:00:00Z", "nodes": []any{}, "error": "boom"})
		})
		out, errOut, code := run(t, map[string]string{"YUKTA_SERVER": f.URL}, "run", "--watch", "s/w")
		if code != want || !strings.Contains(out, "status: "+status+"\n") || !strings.Contains(out, "error: boom\n") {
			t.Errorf("%s: exit %d, want %d\n%s%s", status, code, want, out, errOut)
		}
	}
}
