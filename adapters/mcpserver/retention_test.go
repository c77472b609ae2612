package mcpserver

import (
	"strings"
	"testing"
)

// get_workflow_status (the MCP read of one execution) of a run the retention policy deleted says so, with the
// date, instead of the generic not-found; a run of a session the caller
// cannot read still gets the generic answer.
func TestGetExecutionOfADeletedRun(t *testing.T) {
	t.Parallel()
	ts, env := newTestServer(t)
	cs := connect(t, ts.URL, secretOf("viewer"))
	const id = "01a231ac-2b5a-7faf-8267-beeab2990b08"
	if _, err := env.admin.Exec(t.Context(), `
		INSERT INTO deleted_executions (execution_id, session_id, workflow_id, status, started_at, ended_at, deleted_at, retention_days, journal)
		VALUES ($1, 'own', 'w', 'SUCCESS', '2026-10-01T10:00:00Z', '2026-10-01T10:00:05Z', '2026-11-30T03:00:00Z', 30, 'deleted')`, id); err != nil {
		t.Fatal(err)
	}
	res := call(t, cs, "get_workflow_status", map[string]any{"sessionId": "own", "executionId": id})
	got := text(res)
	if !res.IsError || !strings.Contains(got, "was deleted by the retention policy on 2026-11-30 03:00:00Z") ||
		!strings.Contains(got, "ended SUCCESS on 2026-10-01") || !strings.Contains(got, "journal was deleted with it") {
		t.Fatalf("get_workflow_status of a deleted run: %s", got)
	}
	if strings.Contains(got, "/api/") || strings.Count(got, "get_workflow_history") != 1 {
		t.Errorf("the text names a route, or a tool other than the one next step: %s", got)
	}
}
