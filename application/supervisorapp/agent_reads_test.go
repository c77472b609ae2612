package supervisorapp_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// getView is the run read behind GetAgentExecution: it records what it was
// asked, so a read of a run not owned is seen to stop before it.
type getView struct{ asked []string }

func (g *getView) Handle(_ context.Context, sessionID, id string) (executionapp.ExecutionView, error) {
	g.asked = append(g.asked, sessionID+"/"+id)
	return executionapp.ExecutionView{ID: id, SessionID: sessionID}, nil
}

// TestAgentExecutionPages: ListAgentExecutions pages through the owned
// unfinished runs oldest first, each once, with truncated and a cursor on
// every page but the last; runs of other sessions and finished runs are
// never listed; a bad limit or cursor is invalid, naming it.
func TestAgentExecutionPages(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `INSERT INTO sessions (session_id, name, created_at, updated_at) VALUES ('ci', 'ci', now(), now()), ('other', 'other', now(), now())`); err != nil {
		t.Fatal(err)
	}
	var owned []string
	if err := pool.QueryRow(ctx, `
		WITH x AS (INSERT INTO executions (execution_id, session_id, workflow_id, status, definition, actor, channel, started_at)
		           SELECT gen_random_uuid(), s, 'nap', st, '{}', 'key:test', 'rest', now() - make_interval(secs => i % 3)
		             FROM generate_series(1, 14) AS i,
		                  LATERAL (SELECT CASE WHEN i % 7 = 0 THEN 'other' ELSE 'ci' END AS s,
		                                  CASE WHEN i % 5 = 0 THEN 'SUCCESS' ELSE 'RUNNING' END AS st) AS v
		           RETURNING execution_id, session_id, status)
		SELECT array_agg(execution_id::text) FROM x WHERE session_id = 'ci' AND status = 'RUNNING'`).Scan(&owned); err != nil {
		t.Fatal(err)
	}
	st := postgres.NewSupervisorRuntime(pool)
	uc := supervisorapp.NewListAgentExecutions(st)
	sup := supervisor.Restore(supervisor.Spec{ID: "agent", Name: "Agent", EngineType: "http", Owns: []string{"session:ci"}, Enabled: true})
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := uc.Handle(ctx, supervisorapp.AgentExecutionsInput{Supervisor: sup, Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if page.Truncated != (page.NextCursor != "") || (page.Truncated && len(page.Runs) != 3) {
			t.Fatalf("page %d: %d runs, truncated %v, cursor %q", pages, len(page.Runs), page.Truncated, page.NextCursor)
		}
		for i, r := range page.Runs {
			if i > 0 && r.StartedAt.Before(page.Runs[i-1].StartedAt) {
				t.Fatalf("page %d is not oldest first", pages)
			}
			seen = append(seen, r.ID)
		}
		if !page.Truncated {
			break
		}
		cursor = page.NextCursor
	}
	slices.Sort(seen)
	slices.Sort(owned)
	if !slices.Equal(seen, owned) {
		t.Fatalf("pages: %v\nwant each owned unfinished run once: %v", seen, owned)
	}
	for _, in := range []supervisorapp.AgentExecutionsInput{{Limit: -1}, {Limit: supervisorapp.MaxAgentRunPage + 1}, {Cursor: "bogus"}, {Cursor: "MTIzLm5vdC1hLXV1aWQ"}} {
		in.Supervisor = sup
		_, err := uc.Handle(ctx, in)
		var ve *fault.ValidationError
		if !errors.As(err, &ve) || len(ve.Violations) != 1 {
			t.Fatalf("%+v: %v, want one violation", in, err)
		}
	}

	// One run: owned is read; another session's and a missing one are the
	// same not-found, but the id, and never reach the read.
	get := &getView{}
	one := supervisorapp.NewGetAgentExecution(st, get)
	if _, err := one.Handle(ctx, sup, owned[0]); err != nil {
		t.Fatal(err)
	}
	var foreign string
	if err := pool.QueryRow(ctx, `SELECT execution_id::text FROM executions WHERE session_id = 'other' LIMIT 1`).Scan(&foreign); err != nil {
		t.Fatal(err)
	}
	const missing = "0193b7a0-0000-7000-8000-000000000000"
	_, errForeign := one.Handle(ctx, sup, foreign)
	_, errMissing := one.Handle(ctx, sup, missing)
	_, errLogs := supervisorapp.NewReadAgentLogs(st, nil).Handle(ctx, supervisorapp.AgentLogsInput{Supervisor: sup, ExecutionID: foreign})
	for _, err := range []error{errForeign, errMissing, errLogs} {
		if !errors.Is(err, supervisorapp.ErrOwnedRunNotFound) || !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("%v, want ErrOwnedRunNotFound", err)
		}
	}
	if strings.ReplaceAll(errForeign.Error(), foreign, missing) != errMissing.Error() || errLogs.Error() != errForeign.Error() {
		t.Fatalf("a foreign run %q and a missing one %q must read alike", errForeign, errMissing)
	}
	if len(get.asked) != 1 {
		t.Fatalf("the run read was asked %v; want only the owned run", get.asked)
	}
}
