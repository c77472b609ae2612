package cli

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
)

// listBody is a page as the server sends it, with a number a float64 would
// round.
const listBody = `{"executions":[{"executionId":"e-2","workflowId":"w","status":"SUCCESS","startedAt":"2025-01-01T00:00:00Z","n":9007199254740993},
 {"executionId":"e-1","workflowId":"w","status":"FAILURE","startedAt":"2025-01-01T00:00:00Z"}],"nextCursor":"c2"}`

func TestOutputFormats(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("cursor") == "c2" {
			_, _ = w.Write([]byte(`{"executions":[{"executionId":"e-0","workflowId":"w","status":"STOPPED","startedAt":"2025-01-01T00:00:00Z"}]}`))
			return
		}
		_, _ = w.Write([]byte(listBody))
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}

	out, _, code := run(t, env, "runs", "list", "s", "-o", "json")
	if code != 0 || !strings.Contains(out, `"n": 9007199254740993`) || !strings.Contains(out, `"nextCursor": "c2"`) {
		t.Fatalf("-o json: exit %d\n%s", code, out)
	}
	out, _, _ = run(t, env, "runs", "list", "s", "--output", "jsonl")
	want := `{"executionId":"e-2","workflowId":"w","status":"SUCCESS","startedAt":"2025-01-01T00:00:00Z","n":9007199254740993}` + "\n" +
		`{"executionId":"e-1","workflowId":"w","status":"FAILURE","startedAt":"2025-01-01T00:00:00Z"}` + "\n"
	if out != want {
		t.Fatalf("-o jsonl:\n%s\nwant\n%s", out, want)
	}
	out, errOut, _ := run(t, env, "runs", "list", "s", "--workflow", "w", "--status", "failure", "--limit", "2")
	if !strings.Contains(out, "EXECUTION") || !strings.Contains(out, "e-1") || !strings.Contains(errOut, "more: --cursor c2 (or --all)") {
		t.Fatalf("table: %s\n%s", out, errOut)
	}
	q := f.requests()[2].URL.Query()
	if q.Get("workflowId") != "w" || q.Get("status") != "FAILURE" || q.Get("limit") != "2" {
		t.Fatalf("query %v", q)
	}
	out, _, _ = run(t, env, "runs", "list", "s", "--all", "-o", "jsonl")
	if n := strings.Count(out, "\n"); n != 3 || !strings.Contains(out, "e-0") {
		t.Fatalf("--all follows the cursor: %d lines\n%s", n, out)
	}
	out, _, _ = run(t, env, "runs", "list", "s", "--all", "-o", "json")
	if strings.Contains(out, "nextCursor") || strings.Count(out, "executionId") != 3 {
		t.Fatalf("--all -o json is one list without a cursor\n%s", out)
	}
}

func TestUsageErrorsNameTheHelp(t *testing.T) {
	env := map[string]string{"YUKTA_SERVER": "http://127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"sessions", "show"}, []string{"yukta sessions show: missing arguments: want SESSION", "Usage: yukta sessions show SESSION", "Run 'yukta sessions show -h' for help."}},
		{[]string{"status", "a", "b", "c"}, []string{`too many arguments: "c"`}},
		{[]string{"status", "s", "-o", "xml"}, []string{`-o "xml": want table, json or jsonl`, "yukta status -h"}},
		{[]string{"logs", "s", "e", "-f", "-o", "json"}, []string{"use -o jsonl"}},
		{[]string{"runs", "list", "s", "--cursor", "c", "--all"}, []string{"cursor", "all", "yukta runs list -h"}},
		{[]string{"runs", "list", "s", "--limit", "0"}, []string{"--limit 0: want 1 to 500"}},
		{[]string{"sessions"}, []string{"missing the sessions command; use list, show or delete", "yukta sessions -h"}},
		{[]string{"plugins", "frob"}, []string{`unknown plugins command "frob"; use list or show`}},
		{[]string{"workflows", "show", "nowf"}, []string{`"nowf" is not SESSION/WORKFLOW`}},
		{[]string{"status", "--nope", "s"}, []string{"unknown flag: --nope", "yukta status -h"}},
	} {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), c.args[0], c.args[1:], &out, &errOut, func(k string) string { return env[k] })
		if code != exitUsage || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q", c.args, code, out.String())
		}
		for _, w := range c.want {
			if !strings.Contains(errOut.String(), w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut.String())
			}
		}
	}
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	a := New(context.Background(), &out, &errOut, nil)
	if code := a.Execute([]string{"help"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, w := range []string{"yukta sessions list", "yukta runs list SESSION", "yukta supervisors credential show SUPERVISOR",
		"yukta journal verify FILE", "yukta completion bash|zsh|fish", "-o table|json|jsonl", "6 server unreachable"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("help lacks %q", w)
		}
	}
	out.Reset()
	if code := New(context.Background(), &out, &errOut, nil).Execute([]string{"journal", "export", "-h"}); code != 0 ||
		strings.Count(out.String(), "journal export") != 1 || !strings.Contains(out.String(), "yukta journal export SESSION EXECUTION") {
		t.Errorf("journal export -h (exit %d):\n%s", code, out.String())
	}
}

func TestAnswerTemplate(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"},
		"n": map[string]any{"type": "integer"}, "why": map[string]any{"type": "string"}, "tags": map[string]any{"type": "array"}}}
	for _, c := range []struct {
		mode   string
		schema *map[string]any
		want   string
	}{
		{"", nil, `{"approved": true, "comment": ""}`},
		{"approval", nil, `{"approved": true, "comment": ""}`},
		{"answer", nil, `{}`},
		{"answer", &schema, `{"n": 0, "ok": true, "tags": [], "why": ""}`},
	} {
		if got := answerTemplate(c.mode, c.schema); got != c.want {
			t.Errorf("%q: %s, want %s", c.mode, got, c.want)
		}
	}
	if got := shellQuote(`{"a": "it's"}`); got != `'{"a": "it'\''s"}'` {
		t.Errorf("shellQuote: %s", got)
	}
}
