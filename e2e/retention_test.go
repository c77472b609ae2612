package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
	"github.com/yukta/yukta/domain/journal"
)

// retentionSession: "w" is the typical run (a trigger, a SPLIT of three, a
// LOG that gets each element, a RESULT); "slow" holds its message for a
// while, so its runs are in flight while the sweeper deletes.
const retentionSession = `{"name":"retention","workflows":[
 {"workflowId":"w","nodes":[
   {"nodeId":"start","type":"MANUAL"},
   {"nodeId":"split","type":"SPLIT","config":{"field":"items"}},
   {"nodeId":"log","type":"LOG"},
   {"nodeId":"out","type":"RESULT"}],
  "edges":[{"source":"start","target":"split"},{"source":"split","target":"log"},{"source":"log","target":"out"}]},
 {"workflowId":"slow","nodes":[
   {"nodeId":"start","type":"MANUAL"},
   {"nodeId":"wait","type":"DELAY","config":{"duration":"25s"}},
   {"nodeId":"out","type":"RESULT"}],
  "edges":[{"source":"start","target":"wait"},{"source":"wait","target":"out"}]}]}`

// tableCounts counts every table of the schema, and for each table that
// names executions the rows naming the given runs.
func tableCounts(t *testing.T, conn *pgx.Conn, runs []string) (all, naming map[string]int) {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, `
		SELECT c.relname, EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'execution_id' AND NOT a.attisdropped)
		  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type tbl struct {
		name  string
		named bool
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tbl, error) {
		var x tbl
		return x, r.Scan(&x.name, &x.named)
	})
	if err != nil {
		t.Fatal(err)
	}
	all, naming = map[string]int{}, map[string]int{}
	for _, x := range tables {
		all[x.name] = queryInt(t, conn, `SELECT count(*) FROM `+pgx.Identifier{x.name}.Sanitize())
		if x.named {
			naming[x.name] = queryInt(t, conn, `SELECT count(*) FROM `+pgx.Identifier{x.name}.Sanitize()+` WHERE execution_id::text = ANY($1)`, runs)
		}
	}
	if len(all) < 20 {
		t.Fatalf("only %d tables found; the count would prove little", len(all))
	}
	return all, naming
}

func startRuns(t *testing.T, s *server, wid string, n int, payload func(i int) any) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		res, err := s.Client.StartExecutionWithResponse(context.Background(), "ret", wid, nil, apiclient.StartExecutionJSONRequestBody{Payload: payload(i)})
		if err != nil || res.JSON201 == nil {
			t.Fatalf("start %s #%d: %v %v", wid, i, err, res)
		}
		ids[i] = res.JSON201.ExecutionId
	}
	return ids
}

// TestRetentionDeletesWhileRunsFly is the retention "done when": 1,000
// finished runs older than the policy are deleted while 100 runs are in
// flight; the in-flight runs finish SUCCESS; every table's row count comes
// back to the expected figure; each deleted run answers 404 saying the
// retention policy deleted it; the export folder holds one NDJSON journal
// per deleted run, each of which verifies offline. Then RESTART_FROM_NODE
// of a run whose work items were folded re-feeds the node what it got.
func TestRetentionDeletesWhileRunsFly(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	exportDir := t.TempDir()
	s := startServer(t, serverOptions{DSN: dsn, Args: []string{"--retention-days", "30", "--retention-journals", "delete",
		"--retention-export-dir", exportDir, "--retention-interval", "1s", "--retention-batch", "100", "--retention-pause", "20ms"}})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if res, err := s.Client.PutSessionWithBodyWithResponse(ctx, "ret", nil, jsonType, strings.NewReader(retentionSession)); err != nil || res.StatusCode() >= 300 {
		t.Fatalf("apply: %v %s", err, res.Body)
	}
	base, _ := tableCounts(t, conn, nil)

	// 1,000 finished runs, then made 31 days old.
	old := startRuns(t, s, "w", 1000, func(i int) any { return map[string]any{"items": []any{i, "b", map[string]any{"c": i}}} })
	waitEnded(t, conn, old, 120*time.Second)
	if n := queryInt(t, conn, `SELECT count(*) FROM executions WHERE execution_id = ANY($1::uuid[]) AND status = 'SUCCESS'`, old); n != 1000 {
		t.Fatalf("%d of 1000 runs SUCCESS", n)
	}
	// 100 runs in flight, held in a DELAY while the sweeper works.
	flying := startRuns(t, s, "slow", 100, func(i int) any { return map[string]any{"n": i} })
	began := time.Now()
	if _, err := conn.Exec(ctx, `UPDATE executions SET ended_at = ended_at - interval '31 days' WHERE execution_id = ANY($1::uuid[])`, old); err != nil {
		t.Fatal(err)
	}
	took := poll(t, 60*time.Second, "the sweeper deleting 1,000 runs", func() bool {
		return queryInt(t, conn, `SELECT count(*) FROM deleted_executions WHERE execution_id = ANY($1::uuid[])`, old) == 1000
	})
	if live := queryInt(t, conn, `SELECT count(*) FROM executions WHERE execution_id = ANY($1::uuid[]) AND ended_at IS NULL`, flying); live == 0 {
		t.Fatalf("the in-flight runs had all ended before the deletion finished (%v); the test proved no overlap", time.Since(began))
	} else {
		t.Logf("1,000 runs deleted in %v with %d of 100 runs in flight", took, live)
	}
	waitEnded(t, conn, flying, 60*time.Second)
	if n := queryInt(t, conn, `SELECT count(*) FROM executions WHERE execution_id = ANY($1::uuid[]) AND status = 'SUCCESS'`, flying); n != 100 {
		t.Fatalf("%d of 100 in-flight runs ended SUCCESS", n)
	}
	// Every table is back to its count before the runs, plus the rows of
	// the 100 runs that stay and one tombstone per deleted run: the
	// journals of deleted runs went with them (--retention-journals
	// delete). The observer must have journaled the survivors first.
	poll(t, 30*time.Second, "the observer journaling the in-flight runs", func() bool {
		return queryInt(t, conn, `SELECT count(*) FROM journal_checkpoints WHERE execution_id = ANY($1::uuid[])`, flying) >= 100
	})
	after, staying := tableCounts(t, conn, flying)
	for tbl, n := range after {
		want := base[tbl] + staying[tbl]
		if tbl == "deleted_executions" {
			want += 1000
		}
		if n != want {
			t.Errorf("table %s: %d rows, want %d (%d before the runs + %d of the runs that stay)", tbl, n, want, base[tbl], staying[tbl])
		}
	}
	if _, deleted := tableCounts(t, conn, old); true {
		for tbl, n := range deleted {
			if n != 0 && tbl != "deleted_executions" {
				t.Errorf("table %s still has %d rows of deleted runs", tbl, n)
			}
		}
	}

	// A deleted run answers 404 and says why.
	code, body, _ := call(t, s, "GET", "/api/sessions/ret/executions/"+old[17], "", nil)
	if code != 404 || !bytes.Contains(body, []byte("was deleted by the retention policy on "+time.Now().UTC().Format("2006-01-02"))) ||
		!bytes.Contains(body, []byte("kept 30 days")) {
		t.Fatalf("GET a deleted run: %d %s", code, body)
	}
	code, body, _ = call(t, s, "GET", "/api/sessions/ret/executions/"+old[18]+"/journal", "", nil)
	if code != 404 || !bytes.Contains(body, []byte("retention policy")) {
		t.Fatalf("GET a deleted run's journal: %d %s", code, body)
	}
	for _, path := range []string{"/logs", "/events"} {
		code, body, _ = call(t, s, "GET", "/api/sessions/ret/executions/"+old[19]+path, "", nil)
		if code != 404 || !bytes.Contains(body, []byte("retention policy")) {
			t.Fatalf("GET a deleted run's %s: %d %s", path, code, body)
		}
	}
	code, body, _ = call(t, s, "POST", "/api/sessions/ret/executions/"+old[20]+"/control", "", []byte(`{"action":"RESTART"}`))
	if code != 404 || !bytes.Contains(body, []byte("retention policy")) {
		t.Fatalf("RESTART of a deleted run: %d %s", code, body)
	}
	// The metrics count what the sweeper did.
	code, body, _ = call(t, s, "GET", "/metrics", "", nil)
	for _, series := range []string{`yukta_retention_runs_total{what="deleted"} `, `yukta_retention_runs_total{what="exported"} `} {
		_, rest, ok := bytes.Cut(body, []byte("\n"+series))
		if code != 200 || !ok {
			t.Fatalf("metrics: %d, no %s", code, series)
		}
		n, err := strconv.Atoi(string(bytes.Fields(rest)[0]))
		if err != nil || n < len(old) {
			t.Fatalf("metrics: %s is %d (%v, found %v), want at least %d", series, n, err, ok, len(old))
		}
	}

	// One NDJSON journal per deleted run in the export folder, each VALID
	// under the server's key; the CLI agrees on a few.
	files, err := filepath.Glob(filepath.Join(exportDir, "ret", "*.ndjson"))
	if err != nil || len(files) != 1000 {
		t.Fatalf("export folder holds %d journals (%v), want 1000", len(files), err)
	}
	pub := journalPublicKey(dsn)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var lines [][]byte
		for l := range bytes.Lines(b) {
			lines = append(lines, bytes.TrimSuffix(l, []byte("\n")))
		}
		if res := journal.VerifyExport(lines, pub); res.Result != journal.VerdictValid {
			t.Fatalf("%s: %+v", f, res)
		}
	}
	key := base64.StdEncoding.EncodeToString(pub)
	for _, f := range files[:3] {
		cliWant(t, yukta(t, s.URL, "journal", "verify", f, "--public-key", key), 0, "result: VALID")
	}

	// RESTART_FROM_NODE after pruning: a run that ended two hours ago is
	// past --retention-prune-after (1h) but inside the 30 days.
	src := startRuns(t, s, "w", 1, func(int) any { return map[string]any{"items": []any{"one", "two", "three"}} })
	waitEnded(t, conn, src, 30*time.Second)
	if _, err := conn.Exec(ctx, `UPDATE executions SET ended_at = ended_at - interval '2 hours' WHERE execution_id = $1`, src[0]); err != nil {
		t.Fatal(err)
	}
	poll(t, 30*time.Second, "the sweeper folding the run's work items", func() bool {
		return queryInt(t, conn, `SELECT count(*) FROM executions WHERE execution_id = $1 AND items_pruned`, src[0]) == 1
	})
	if n := queryInt(t, conn, `SELECT count(*) FROM work_items WHERE execution_id = $1`, src[0]); n != 0 {
		t.Fatalf("%d work items left after folding", n)
	}
	code, body, _ = call(t, s, "POST", "/api/sessions/ret/executions/"+src[0]+"/control", "",
		[]byte(`{"action":"RESTART_FROM_NODE","fromNodeId":"log","wait":10}`))
	var cr struct {
		Status             string   `json:"status"`
		ResultExecutionIds []string `json:"resultExecutionIds"`
	}
	if err := json.Unmarshal(body, &cr); err != nil || code >= 300 || len(cr.ResultExecutionIds) != 1 {
		t.Fatalf("RESTART_FROM_NODE of a folded run: %d %s", code, body)
	}
	waitEnded(t, conn, cr.ResultExecutionIds, 30*time.Second)
	x, err := s.Client.GetExecutionWithResponse(ctx, "ret", cr.ResultExecutionIds[0])
	if err != nil || x.JSON200 == nil {
		t.Fatalf("read the restart: %v", err)
	}
	got := map[string]string{}
	for _, n := range x.JSON200.Nodes {
		got[n.NodeId] = fmt.Sprintf("%s %d/%d", n.Status, n.Received, n.Emitted)
	}
	if x.JSON200.Status != "SUCCESS" || got["log"] != "SUCCESS 3/3" || !strings.HasPrefix(got["out"], "SUCCESS 3/") {
		t.Fatalf("restart from log after folding: %s %v; want SUCCESS with log re-fed its 3 messages", x.JSON200.Status, got)
	}
}

// TestSessionRetentionReadsBack: a session's retention is stored, read back
// as it was applied (a part left out stays out), survives a read-and-put, and
// a bad one is refused naming the field, changing nothing.
func TestSessionRetentionReadsBack(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	ctx := context.Background()
	doc := strings.Replace(retentionSession, `{"name":"retention",`, `{"name":"retention","retention":{"days":0},`, 1)
	if res, err := s.Client.PutSessionWithBodyWithResponse(ctx, "keep", nil, jsonType, strings.NewReader(doc)); err != nil || res.StatusCode() != 201 {
		t.Fatalf("apply: %v %s", err, res.Body)
	}
	got, err := s.Client.GetSessionWithResponse(ctx, "keep")
	if err != nil || got.JSON200 == nil || got.JSON200.Retention.Days == nil || *got.JSON200.Retention.Days != 0 || got.JSON200.Retention.Journals != nil {
		t.Fatalf("read back: %v %s; want retention {days: 0} and no journals", err, got.Body)
	}
	body, _ := json.Marshal(got.JSON200)
	if res, err := s.Client.PutSessionWithBodyWithResponse(ctx, "keep", nil, jsonType, bytes.NewReader(body)); err != nil || res.StatusCode() != 200 {
		t.Fatalf("put the read document back: %v %s", err, res.Body)
	}
	bad := strings.Replace(retentionSession, `{"name":"retention",`, `{"name":"retention","retention":{"days":7,"journals":"archive"},`, 1)
	code, b, _ := call(t, s, "PUT", "/api/sessions/keep", "", []byte(bad))
	if code != 400 || !bytes.Contains(b, []byte("retention")) || !bytes.Contains(b, []byte("journals")) {
		t.Fatalf("bad retention: %d %s", code, b)
	}
	got, _ = s.Client.GetSessionWithResponse(ctx, "keep")
	if got.JSON200 == nil || got.JSON200.Retention.Days == nil || *got.JSON200.Retention.Days != 0 {
		t.Fatalf("a refused apply changed the session: %s", got.Body)
	}
}
