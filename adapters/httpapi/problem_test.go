package httpapi

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
)

// TestProblemAddsTheRouteToTry: the core's not-found texts name no route;
// the REST edge adds the one to try next, once, and leaves other errors'
// texts as they are.
func TestProblemAddsTheRouteToTry(t *testing.T) {
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/api/sessions/s/executions/x", nil), httptest.NewRecorder())
	deleted := executionapp.DeletedExecution(executionapp.Tombstone{ExecutionID: "x", Status: "SUCCESS", DeletedAt: time.Now(), EndedAt: time.Now(), RetentionDays: 30, JournalKept: true})
	for _, tt := range []struct {
		err        error
		status     int
		suffix     string
		mustNotSay string
	}{
		{fault.Newf(executionapp.ErrExecutionNotFound, "Execution not found: x."), 404,
			"Execution not found: x. List a session's executions with GET /api/sessions/{sessionId}/executions.", "get_workflow_history"},
		{deleted, 404, "it can still be exported and verified. List the executions that remain with GET /api/sessions/{sessionId}/executions.", "list executions"},
		{fault.Newf(fault.ErrConflict, "the execution already ended"), 409, "the execution already ended", "GET /api"},
	} {
		p := problemFor(c, tt.err)
		if p.Status != tt.status || !strings.HasSuffix(p.Detail, tt.suffix) || strings.Contains(p.Detail, tt.mustNotSay) ||
			strings.Count(p.Detail, "GET /api") > 1 {
			t.Errorf("problemFor(%v): %d %q; want %d ending %q", tt.err, p.Status, p.Detail, tt.status, tt.suffix)
		}
	}
	if !errors.Is(deleted, executionapp.ErrExecutionDeleted) {
		t.Fatal("fixture: the deleted error is not ErrExecutionDeleted")
	}
}
