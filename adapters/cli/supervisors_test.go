package cli

import (
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// supervisorAnswer is what the server sends back for a stored supervisor.
const supervisorAnswer = `{"allowedCommands":["PauseWorkflow"],"enabled":true,"engine":{"settings":{"rules":[{"id":"r","when":{"event":"NodeStatusChanged","count":3,"withinSeconds":60},"then":{"command":"PauseWorkflow"}}],"big":9007199254740993},"type":"rules"},"id":"guard","name":"Guard","owns":["session:ci"],"parentId":"ops","reviews":[]}`

func TestSupervisorCommands(t *testing.T) {
	var body atomic.Value
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body.Store(string(b))
		switch {
		case r.Method == http.MethodPut:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, supervisorAnswer)
		case r.Method == http.MethodGet && r.URL.Path == "/api/supervisors":
			writeJSON(w, 200, map[string]any{"supervisors": []map[string]any{
				{"id": "guard", "name": "Guard", "engine": "rules", "owns": []string{"session:ci", "session:web"}, "parentId": "ops", "enabled": true,
					"createdAt": "2026-03-01T12:00:00Z", "updatedAt": "2026-03-01T12:00:00Z", "updatedBy": "key:admin", "updatedVia": "rest"},
				{"id": "ops", "name": "Ops", "engine": "http", "owns": []string{}, "enabled": false,
					"createdAt": "2026-03-01T12:00:00Z", "updatedAt": "2026-03-01T12:00:01Z", "updatedBy": "anonymous", "updatedVia": "cli (claimed)"},
			}})
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, supervisorAnswer)
		case r.Method == http.MethodDelete && r.URL.Path == "/api/supervisors/guard":
			writeJSON(w, 200, map[string]any{"supervisorId": "guard", "releasedHolds": []map[string]any{{"sessionId": "ci",
				"executionId": "01a2339a-b316-7d17-a312-1c0df7b86048", "supervisorId": "guard", "heldSince": "2026-03-01T12:00:00Z",
				"holdReason": "why", "resumed": true, "message": "released", "holds": []any{}}}})
		case r.Method == http.MethodDelete:
			w.WriteHeader(204)
		}
	})
	env := map[string]string{"YUKTA_SERVER": f.URL}
	file := t.TempDir() + "/guard.json"
	doc := `{"id":"guard","name":"Guard","engine":{"type":"rules","settings":{"rules":[]}}}`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := run(t, env, "supervisors", "apply", file)
	if want := "supervisor: guard\naction: created\nengine: rules\nowns: session:ci\nparent: ops\nenabled: true\n"; code != 0 || out != want {
		t.Fatalf("apply: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	r := f.requests()[0]
	if r.Method != http.MethodPut || r.URL.Path != "/api/supervisors/guard" || r.Header.Get("Yukta-Channel") != "cli" || body.Load() != doc {
		t.Fatalf("apply sent %s %s %v %q", r.Method, r.URL.Path, r.Header, body.Load())
	}
	if _, _, code := run(t, env, "supervisors", "apply", file, "--id", "other"); code != 0 || f.requests()[1].URL.Path != "/api/supervisors/other" {
		t.Fatalf("apply --id: exit %d, path %s", code, f.requests()[1].URL.Path)
	}

	out, _, code = run(t, env, "supervisors", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "SUPERVISOR") ||
		strings.Join(strings.Fields(lines[1]), " ") != "guard rules true ops session:ci,session:web 2026-03-01T12:00:00.000Z key:admin" ||
		strings.Join(strings.Fields(lines[2]), " ") != "ops http false - - 2026-03-01T12:00:01.000Z anonymous" {
		t.Fatalf("list: exit %d\n%s", code, out)
	}

	out, _, code = run(t, env, "supervisors", "show", "guard")
	if code != 0 || !strings.HasPrefix(out, "{\n  \"id\": \"guard\",\n  \"name\": \"Guard\",\n  \"engine\": {\n    \"type\": \"rules\",") ||
		!strings.Contains(out, "9007199254740993") || !strings.Contains(out, `"parentId": "ops"`) || strings.Contains(out, "tickSeconds") {
		t.Fatalf("show: exit %d\n%s", code, out)
	}

	out, _, code = run(t, env, "supervisors", "delete", "guard")
	if code != 0 || out != "supervisor: guard\naction: deleted\nhold: ci/01a2339a-b316-7d17-a312-1c0df7b86048 released, resumed\n" {
		t.Fatalf("delete: exit %d %q", code, out)
	}
	if r := f.requests()[len(f.requests())-1]; r.Method != http.MethodDelete || r.URL.Path != "/api/supervisors/guard" || r.Header.Get("Yukta-Channel") != "cli" {
		t.Fatalf("delete sent %s %s %v", r.Method, r.URL.Path, r.Header)
	}

	// Usage errors reach no server.
	n := len(f.requests())
	for _, args := range [][]string{{}, {"explode"}, {"show"}, {"delete", "a", "b"}, {"list", "x"}} {
		if _, _, code := run(t, env, "supervisors", args...); code != 2 {
			t.Errorf("supervisors %v: exit %d, want 2", args, code)
		}
	}
	noID := t.TempDir() + "/x.json"
	_ = os.WriteFile(noID, []byte(`{"name":"x"}`), 0o600)
	if _, errOut, code := run(t, env, "supervisors", "apply", noID); code != 2 || !strings.Contains(errOut, `has no "id"`) {
		t.Errorf("apply without id: exit %d %s", code, errOut)
	}
	if len(f.requests()) != n {
		t.Errorf("usage errors sent %d requests", len(f.requests())-n)
	}
}

func TestSupervisorApplyPrintsEveryProblem(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"type":"urn:yukta:problem:invalid","title":"Invalid supervisor","status":400,
			"detail":"2 problems found; see errors. Nothing was changed.",
			"errors":[{"path":"engine.settings.rules[0].when.count","message":"must be from 1 to 10000, got 0"},{"path":"parentId","message":"supervisor \"ops\" does not exist"}]}`)
	})
	file := t.TempDir() + "/g.json"
	_ = os.WriteFile(file, []byte(`{"id":"guard"}`), 0o600)
	out, errOut, code := run(t, map[string]string{"YUKTA_SERVER": f.URL}, "supervisors", "apply", file)
	if code != 1 || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"was not applied; fix every line below", "400 Invalid supervisor: 2 problems found",
		"\nengine.settings.rules[0].when.count: must be from 1 to 10000, got 0\n", "\nparentId: supervisor \"ops\" does not exist\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
