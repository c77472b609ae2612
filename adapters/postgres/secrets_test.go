package postgres_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
)

// TestSecretsNeverReachRunOutput (issue 11, finding 4): a secret config
// value of a run's workflow that turns up in a node's error, a log line, an
// input's prompt or the result is masked before it is stored, so no row a
// reader, a stream or the journal sees holds it. Only the definition
// snapshot keeps it, because the node that owns it needs it to run, and the
// messages between nodes (work items), which are data no read path shows:
// masking them would change what the next node computes.
func TestSecretsNeverReachRunOutput(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	const canary = "canary-7Hq2xZ9v"
	// The HTTP_REQUEST node holds the secret; no trigger reaches it (a
	// warning, not an error), so it never calls anything.
	holder := fmt.Sprintf(`{"nodeId":"holder","type":"HTTP_REQUEST","config":{"url":"https://example.com/x","authorization":"Bearer %s"}}`, canary)
	session := fmt.Sprintf(`{"sessionId":"sec","name":"secrets","workflows":[
		{"workflowId":"fails","nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"say","type":"LOG","config":{"message":"the token is %[1]s"}},
			{"nodeId":"boom","type":"FAIL","config":{"message":"upstream said: bad token %[1]s"}},
			%[2]s],
		 "edges":[{"source":"start","target":"say"},{"source":"say","target":"boom"}]},
		{"workflowId":"leaks","nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"t","type":"TRANSFORM","config":{"expression":"{\"token\": \"%[1]s\", \"list\": [\"x %[1]s y\"]}"}},
			{"nodeId":"out","type":"RESULT"},
			%[2]s],
		 "edges":[{"source":"start","target":"t"},{"source":"t","target":"out"}]}]}`, canary, holder)
	f := newEngineFixture(t, pool, "sec", session, nil, func(op string, err error) { t.Errorf("engine %s: %v", op, err) },
		executionapp.EngineConfig{Concurrency: 4, Poll: 20 * time.Millisecond})
	f.run(t)
	start := f.start
	var ids []string
	for _, wf := range []string{"fails", "leaks"} {
		res, err := start.Handle(ctx, executionapp.StartInput{SessionID: "sec", WorkflowID: wf, Trigger: executionapp.TriggerManual, Actor: "test", Channel: "rest"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ExecutionID)
	}
	if got := waitEnded(t, pool, ids); got[ids[0]] != "FAILURE" || got[ids[1]] != "SUCCESS" {
		t.Fatalf("statuses = %v", got)
	}
	// Each place run output is stored, and what it holds now.
	for _, c := range []struct{ what, query, want string }{
		{"execution error", `SELECT string_agg(error, '|') FROM executions`, "node boom failed: upstream said: bad token ***"},
		{"node error", `SELECT string_agg(error, '|') FROM execution_nodes WHERE error <> ''`, "upstream said: bad token ***"},
		{"log lines", `SELECT string_agg(message, '|' ORDER BY seq) FROM execution_logs`, "the token is ***"},
		{"result", `SELECT string_agg(result::text, '|') FROM executions WHERE result IS NOT NULL`, `{"list": ["x *** y"], "token": "***"}`},
		{"events", `SELECT string_agg(data::text, '|') FROM events`, "bad token ***"},
	} {
		var got string
		if err := pool.QueryRow(ctx, c.query).Scan(&got); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if !strings.Contains(got, c.want) || strings.Contains(got, canary) {
			t.Errorf("%s: %q, want it to hold %q and not the secret", c.what, got, c.want)
		}
	}
	// Nothing else stored about the runs holds it either, journal included.
	for _, table := range []string{"execution_nodes", "execution_logs", "events", "inputs", "journal_records"} {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE row_to_json(t)::text LIKE '%' || $1 || '%'`, canary).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%d rows of %s hold the secret", n, table)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM executions t WHERE (to_jsonb(t) - 'definition')::text LIKE '%' || $1 || '%'`, canary).Scan(&n); err != nil || n > 0 {
		t.Errorf("%d executions hold the secret outside their definition (%v)", n, err)
	}
}
