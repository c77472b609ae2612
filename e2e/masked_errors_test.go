package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// TestNodeErrorsNeverShowSecrets (issue 11, finding 4): a secret config
// value of the run's workflow that reaches a node's error text is masked
// before it is stored. The run's and node's error over REST and MCP, the
// event stream, the exported journal and its projection, and every stored
// row but the definition snapshot show *** instead.
func TestNodeErrorsNeverShowSecrets(t *testing.T) {
	t.Parallel()
	const secret = "err-canary-5Jd8Qw2v"
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	// The HTTP node owns the secret; the FAIL node's error quotes it, as an
	// upstream that echoes a rejected token would.
	e.apply("mask", wf("w",
		[]string{nd("start", "MANUAL", ""),
			nd("boom", "FAIL", fmt.Sprintf(`{"message":"upstream refused token Bearer %s"}`, secret)),
			nd("holder", "HTTP_REQUEST", fmt.Sprintf(`{"url":"https://example.com/x","authorization":"Bearer %s"}`, secret))},
		[]string{ed("start", "boom", "")}))
	id := e.start("mask", "w", map[string]any{})
	x := e.waitStatusWithin("mask", id, apiclient.ExecutionStatusFAILURE, time.Minute)
	if got := deref(x.Error); !strings.Contains(got, "upstream refused token ***") {
		t.Fatalf("execution error %q, want the secret masked", got)
	}
	var seen strings.Builder
	add := func(b []byte) { seen.Write(b); seen.WriteByte('\n') }
	res, err := e.c.GetExecutionWithResponse(e.ctx, "mask", id)
	if err != nil {
		t.Fatal(err)
	}
	add(res.Body)
	events, err := e.c.StreamExecutionEvents(e.ctx, "mask", id, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
	defer cancel()
	go func() { <-ctx.Done(); events.Body.Close() }()
	b, _ := io.ReadAll(events.Body)
	add(b)
	if !strings.Contains(string(b), "NodeStatusChanged") {
		t.Fatalf("the event stream held no node events: %.300s", b)
	}
	checkJournals(t, dsn, 30*time.Second)
	for _, p := range []string{"/journal", "/projection", "/logs"} {
		status, body, _ := call(t, s, "GET", "/api/sessions/mask/executions/"+id+p, "", nil)
		if status != 200 {
			t.Fatalf("GET %s: %d %s", p, status, body)
		}
		add(body)
	}
	cs := mustConnect(t, s.URL, "")
	var st any
	mcpCall(t, cs, "get_workflow_status", map[string]any{"sessionId": "mask", "executionId": id}, &st)
	mb, _ := json.Marshal(st)
	add(mb)
	if !strings.Contains(seen.String(), "refused token ***") {
		t.Fatalf("no read path showed the masked error:\n%s", seen.String())
	}
	if strings.Contains(seen.String(), secret) {
		t.Errorf("a read path shows the secret")
	}
	conn, err := pgx.Connect(e.ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(e.ctx)
	for _, table := range []string{"execution_nodes", "execution_logs", "events", "journal_records"} {
		var n int
		if err := conn.QueryRow(e.ctx, `SELECT count(*) FROM `+table+` t WHERE row_to_json(t)::text LIKE '%' || $1 || '%'`, secret).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%d rows of %s hold the secret", n, table)
		}
	}
	var n int
	if err := conn.QueryRow(e.ctx, `SELECT count(*) FROM executions t WHERE (to_jsonb(t) - 'definition')::text LIKE '%' || $1 || '%'`, secret).Scan(&n); err != nil || n > 0 {
		t.Errorf("%d executions hold the secret outside their definition (%v)", n, err)
	}
}
