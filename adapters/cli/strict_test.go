package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// --payload, --equals and an answer are refused before any call unless
// they are strict JSON, with the flag and the place named.
func TestJSONArgumentsAreStrict(t *testing.T) {
	var calls atomic.Int64
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(w, 201, map[string]any{"executionId": "e-1", "status": "PENDING"})
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}
	cases := []struct {
		name    string
		args    []string
		flag    string
		reasons []string
	}{
		{"escaped NUL", []string{"run", "s/w", "--payload", `{"v":"\u0000"}`}, "--payload: v: ", []string{"U+0000"}},
		{"raw NUL", []string{"run", "s/w", "--payload", "{\"v\":\"a\x00\"}"}, "--payload: v: ", []string{"U+0000"}},
		{"NUL in a key", []string{"run", "s/w", "--payload", `{"k\u0000":1}`}, `--payload: ["k\x00"]: `, []string{"U+0000"}},
		{"invalid UTF-8", []string{"run", "s/w", "--payload", "{\"v\":\"\xff\"}"}, "--payload: v: ", []string{"UTF-8"}},
		{"repeated key", []string{"run", "s/w", "--payload", `{"id":1,"id":2}`}, "--payload: id: ", []string{"twice"}},
		{"1e400", []string{"run", "s/w", "--payload", `{"n":1e400}`}, "--payload: n: ", []string{"out of range"}},
		{"not JSON", []string{"run", "s/w", "--payload", `{name:1}`}, "--payload is not valid JSON", []string{"quote it"}},
		{"two values", []string{"run", "s/w", "--payload", `{} {}`}, "--payload has data after", []string{"exactly one value"}},
		{"equals with NUL", []string{"control", "s", "e", "--node", "n", "BREAKPOINT", "--field", "a", "--equals", `"\u0000"`}, "--equals contains", []string{"U+0000"}},
		{"answer repeated key", []string{"answer", "0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f", `{"approved":true,"approved":false}`}, "the answer: approved: ", []string{"twice"}},
	}
	for _, tc := range cases {
		_, errOut, code := run(t, env, tc.args[0], tc.args[1:]...)
		if code == 0 || !strings.Contains(errOut, tc.flag) {
			t.Errorf("%s: exit %d, stderr %q, want a refusal naming %q", tc.name, code, errOut, tc.flag)
		}
		for _, r := range tc.reasons {
			if !strings.Contains(errOut, r) {
				t.Errorf("%s: stderr %q, want it to say %q", tc.name, errOut, r)
			}
		}
		if strings.ContainsRune(errOut, 0) {
			t.Errorf("%s: stderr holds a raw NUL: %q", tc.name, errOut)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d calls reached the server for refused arguments", n)
	}
}

// The payload is sent as the exact text given, and a result is printed with
// the digits the server sent (the generated client would print
// 9007199254740992).
func TestNumbersAreSentAndPrintedExactly(t *testing.T) {
	const payload = `{"id":9007199254740993,"big":9223372036854775809,"f":0.1000000000000000055511151231257827}`
	var sent atomic.Value
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/executions") {
			b, _ := io.ReadAll(r.Body)
			sent.Store(string(b))
			writeJSON(w, 201, map[string]any{"executionId": "e-1", "status": "PENDING"})
			return
		}
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/inputs/") {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"inputId":"i","sessionId":"s","executionId":"e","nodeId":"n","prompt":"p","status":"answered",`+
				`"answer":{"n":9223372036854775809},"createdAt":"2025-01-01T00:00:00Z"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"executionId":"e-1","sessionId":"s","workflowId":"w","status":"SUCCESS","actor":"a","channel":"cli",`+
			`"startedAt":"2025-01-01T00:00:00Z","nodes":[{"nodeId":"n","type":"RESULT","status":"SUCCESS","received":1,"emitted":0,"paused":false,`+
			`"stepMode":false,"skipped":false,"breakpoint":{"field":"id","equals":9007199254740993}}],"result":`+payload+`}`)
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}
	file := filepath.Join(t.TempDir(), "payload.json")
	if err := os.WriteFile(file, []byte(payload+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{payload, "@" + file} {
		out, errOut, code := run(t, env, "run", "s/w", "--payload", arg, "--watch")
		if code != 0 {
			t.Fatalf("run: exit %d: %s", code, errOut)
		}
		if got := sent.Load().(string); !strings.Contains(got, payload) {
			t.Errorf("request body %s, want the payload %s as given", got, payload)
		}
		for _, d := range []string{"9007199254740993", "9223372036854775809", "0.1000000000000000055511151231257827"} {
			if !strings.Contains(out, d) {
				t.Errorf("run --watch printed %q, want %s", out, d)
			}
		}
	}
	out, errOut, code := run(t, env, "status", "s", "e-1")
	if code != 0 || !strings.Contains(out, `result: {"big":9223372036854775809,"f":0.1000000000000000055511151231257827,"id":9007199254740993}`) ||
		!strings.Contains(out, "breakpoint(id=9007199254740993)") {
		t.Errorf("status: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, env, "answer", "0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f", `{"n":9223372036854775809}`)
	if code != 0 || !strings.Contains(out, `answer: {"n":9223372036854775809}`) {
		t.Errorf("answer: exit %d\n%s%s", code, out, errOut)
	}
}
