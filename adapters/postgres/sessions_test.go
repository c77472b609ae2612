package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

func registry(t testing.TB) *pluginapp.Registry {
	t.Helper()
	r, err := pluginapp.NewRegistry(plugins.Descriptors()...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// doc builds a session document with one linear workflow per id.
func doc(id string, workflows ...string) []byte {
	var wfs []string
	for _, w := range workflows {
		wfs = append(wfs, fmt.Sprintf(`{"workflowId":%q,"nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"call","type":"HTTP_REQUEST","config":{"url":"https://example.com/x","authorization":"Bearer s3cret"}},
			{"nodeId":"out","type":"RESULT"}],
			"edges":[{"source":"start","target":"call"},{"source":"call","target":"out"}]}`, w))
	}
	return fmt.Appendf(nil, `{"sessionId":%q,"name":"Session %s","tags":["a","b"],"workflows":[%s]}`, id, id, strings.Join(wfs, ","))
}

type env struct {
	store *postgres.SessionStore
	apply *sessionapp.ApplySession
	cat   *pluginapp.Registry
}

func newEnv(t *testing.T) env {
	pool := pgtest.NewPool(t)
	cat := registry(t)
	return env{
		store: postgres.NewSessionStore(pool),
		apply: sessionapp.NewApplySession(postgres.NewTransactor(pool), cat, time.Now),
		cat:   cat,
	}
}

func TestApplyCreatesThenReplaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()

	res, err := e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "s1", Document: doc("s1", "w1", "w2")})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || !slices.Equal(res.Workflows, []string{"w1", "w2"}) || len(res.RemovedWorkflows) != 0 {
		t.Fatalf("first apply = %+v, want created with w1,w2 and nothing removed", res)
	}
	got, err := e.store.Get(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name() != "Session s1" || !slices.Equal(got.Tags(), []string{"a", "b"}) || !slices.Equal(got.WorkflowIDs(), []string{"w1", "w2"}) {
		t.Fatalf("stored session = %q %v %v", got.Name(), got.Tags(), got.WorkflowIDs())
	}
	w, _ := got.Workflow("w1")
	if n, _ := w.Node("call"); n.Config()["authorization"] != "Bearer s3cret" {
		t.Fatalf("stored secret = %v, want the real value", n.Config()["authorization"])
	}

	res, err = e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "s1", Document: doc("s1", "w2")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || !slices.Equal(res.RemovedWorkflows, []string{"w1"}) {
		t.Fatalf("replace = %+v, want not created, w1 removed", res)
	}
	if _, err := e.store.Workflow(ctx, "s1", "w1"); !errors.Is(err, session.ErrWorkflowNotFound) {
		t.Fatalf("removed workflow read: got %v, want ErrWorkflowNotFound", err)
	}
}

func TestApplyKeepsMaskedSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	if _, err := e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "s", Document: doc("s", "w")}); err != nil {
		t.Fatal(err)
	}
	// A client reads the session (secrets masked) and sends it back.
	masked := strings.Replace(string(doc("s", "w")), "Bearer s3cret", "***", 1)
	if _, err := e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "s", Document: []byte(masked)}); err != nil {
		t.Fatal(err)
	}
	w, err := e.store.Workflow(ctx, "s", "w")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := w.Node("call"); n.Config()["authorization"] != "Bearer s3cret" {
		t.Fatalf("secret after masked re-apply = %v, want the stored value kept", n.Config()["authorization"])
	}
	// A masked value with nothing stored is refused and nothing is written.
	_, err = e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "fresh", Document: []byte(strings.ReplaceAll(masked, `"s"`, `"fresh"`))})
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "authorization") {
		t.Fatalf("masked secret on a new session: got %v, want an invalid error naming the field", err)
	}
	if _, err := e.store.Get(ctx, "fresh"); !errors.Is(err, session.ErrSessionNotFound) {
		t.Fatalf("refused apply stored something: %v", err)
	}
}

// TestApplyReportsEveryProblemAtOnce: one apply lists every problem of the
// document, whichever check finds it: a bad id, an empty name, an unknown
// config field, a credential in a plain header (the type's own check) and a
// masked secret with nothing stored to keep. Before, the masked secret was
// reported only once the rest parsed, and the header only once no field
// check failed.
func TestApplyReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	bad := `{"sessionId": "Bad Id", "name": "", "workflows": [{"workflowId": "w", "nodes": [
		{"nodeId": "start", "type": "MANUAL"},
		{"nodeId": "call", "type": "HTTP_REQUEST", "config": {"url": "https://example.com/x", "authorization": "***",
			"headers": {"X-Api-Key": "k"}, "timeoutMs": 5}},
		{"nodeId": "out", "type": "RESULT"}],
		"edges": [{"source": "start", "target": "call"}, {"source": "call", "target": "out"}]}]}`
	_, err := e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "Bad Id", Document: []byte(bad)})
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("got %v, want a validation error", err)
	}
	var paths []string
	for _, v := range ve.Violations {
		paths = append(paths, v.Path)
	}
	want := []string{"sessionId", "name", "workflows[0].nodes[1].config.timeoutMs",
		"workflows[0].nodes[1].config.headers.X-Api-Key", "workflows[0].nodes[1].config.authorization"}
	if !slices.Equal(paths, want) {
		t.Fatalf("violations at %q, want %q:\n%v", paths, want, ve.Violations)
	}
}

func TestInvalidDocumentChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	if _, err := e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "s", Document: doc("s", "w1", "w2")}); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(doc("s", "w1")), `"type":"RESULT"`, `"type":"NOPE"`, 1)
	if _, err := e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "s", Document: []byte(bad)}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	got, err := e.store.Get(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.WorkflowIDs(), []string{"w1", "w2"}) {
		t.Fatalf("workflows after refused apply = %v, want [w1 w2]", got.WorkflowIDs())
	}
}

func TestConcurrentCreateYieldsOneCreation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 8
	var wg sync.WaitGroup
	created := make(chan bool, n)
	for range n {
		wg.Go(func() {
			res, err := e.apply.Handle(context.Background(), sessionapp.ApplyInput{ID: "race", Document: doc("race", "w")})
			if err != nil {
				t.Error(err)
				return
			}
			created <- res.Created
		})
	}
	wg.Wait()
	close(created)
	count := 0
	for c := range created {
		if c {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("%d applies reported created, want exactly 1", count)
	}
}

func TestDeleteAndNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	if _, err := e.apply.Handle(ctx, sessionapp.ApplyInput{ID: "s", Document: doc("s", "w")}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"get":      func() error { _, err := e.store.Get(ctx, "s"); return err }(),
		"delete":   e.store.Delete(ctx, "s"),
		"workflow": func() error { _, err := e.store.Workflow(ctx, "s", "w"); return err }(),
	} {
		if !errors.Is(err, session.ErrSessionNotFound) || !strings.Contains(err.Error(), "list_sessions") {
			t.Errorf("%s after delete: got %v, want ErrSessionNotFound naming the list call", name, err)
		}
	}
}

func TestListPagesInIDOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := t.Context()
	for _, id := range []string{"c", "a", "e", "b", "d"} {
		if _, err := e.apply.Handle(ctx, sessionapp.ApplyInput{ID: id, Document: doc(id, "w1", "w2")}); err != nil {
			t.Fatal(err)
		}
	}
	list := sessionapp.NewListSessions(e.store)
	var ids []string
	cursor := ""
	pages := 0
	for {
		page, err := list.Handle(ctx, sessionapp.ListInput{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
			if s.WorkflowCount != 2 || s.UpdatedAt.IsZero() {
				t.Errorf("summary %s = %+v, want 2 workflows and a time", s.ID, s)
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if !slices.Equal(ids, []string{"a", "b", "c", "d", "e"}) || pages != 3 {
		t.Fatalf("paged ids = %v in %d pages, want a..e in 3", ids, pages)
	}
	if _, err := list.Handle(ctx, sessionapp.ListInput{Cursor: "!!"}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("bad cursor: got %v, want ErrInvalid", err)
	}
}

func TestReadyAfterMigrate(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	if err := postgres.Ready(t.Context(), pool); err != nil {
		t.Fatalf("Ready on a migrated database: %v", err)
	}
	if _, err := pool.Exec(t.Context(), "DELETE FROM goose_db_version WHERE version_id > 0"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Ready(t.Context(), pool); err == nil {
		t.Fatal("Ready with migrations pending: got nil, want an error")
	}
}

// TestContentsCountsWhatADatabaseHolds: the start-up line's counts, and
// none (not an error) for a database not migrated yet.
func TestContentsCountsWhatADatabaseHolds(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	pool, err := postgres.NewPool(dsn, postgres.PoolOptions{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), registry(t), time.Now)
	for _, id := range []string{"a", "b"} {
		if _, err := apply.Handle(t.Context(), sessionapp.ApplyInput{ID: id, Document: doc(id, "w")}); err != nil {
			t.Fatal(err)
		}
	}
	if s, sv, err := postgres.Contents(t.Context(), dsn); err != nil || s != 2 || sv != 0 {
		t.Fatalf("Contents = %d sessions, %d supervisors, %v; want 2, 0", s, sv, err)
	}
	admin := pgtest.Cluster().DSN("postgres")
	if err := postgres.EnsureDatabase(t.Context(), admin, "unmigrated_contents"); err != nil {
		t.Fatal(err)
	}
	if s, sv, err := postgres.Contents(t.Context(), pgtest.Cluster().DSN("unmigrated_contents")); err != nil || s != 0 || sv != 0 {
		t.Fatalf("Contents of an unmigrated database = %d, %d, %v; want 0, 0, nil", s, sv, err)
	}
}

// TestListSummarizesWorkflowsInOneQuery: each session of a page carries its
// workflows in document order, each with its pause and its newest run (by
// id, which is start order), and a workflow that never ran has none; the
// search keeps the sessions whose id, name or description contains the
// text, ignoring case, with % and _ plain characters.
func TestListSummarizesWorkflowsInOneQuery(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	store := postgres.NewSessionStore(pool)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), registry(t), time.Now)
	ctx := t.Context()
	for _, id := range []string{"shop", "blog", "pct"} {
		if _, err := apply.Handle(ctx, sessionapp.ApplyInput{ID: id, Document: doc(id, "second", "first")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE sessions SET description = 'Orders of the 100% Shop' WHERE session_id = 'shop'`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	runs := []struct{ id, wf, status string }{
		{"0193c000-0000-7000-8000-000000000001", "second", "SUCCESS"},
		{"0193c000-0000-7000-8000-000000000003", "second", "FAILURE"},
		{"0193c000-0000-7000-8000-000000000002", "second", "SUCCESS"},
	}
	for i, r := range runs {
		var ended any
		if r.status != "RUNNING" {
			ended = at.Add(time.Duration(i)*time.Minute + time.Second)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO executions (execution_id, session_id, workflow_id, status, definition, actor, channel, started_at, ended_at)
			VALUES ($1, 'shop', $2, $3, '{}', 'key:ops', 'rest', $4, $5)`, r.id, r.wf, r.status, at.Add(time.Duration(i)*time.Minute), ended); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO workflow_pauses (session_id, workflow_id, actor, channel, reason, paused_at)
		VALUES ('shop', 'first', 'key:ops', 'mcp', 'vendor down', $1)`, at); err != nil {
		t.Fatal(err)
	}

	list := sessionapp.NewListSessions(store)
	page, err := list.Handle(ctx, sessionapp.ListInput{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range page.Sessions {
		got = append(got, s.ID)
		if s.WorkflowCount != 2 || len(s.Workflows) != 2 || s.Workflows[0].ID != "second" || s.Workflows[1].ID != "first" ||
			s.Workflows[0].NodeCount != 3 {
			t.Errorf("session %s: count %d, workflows %+v; want second then first (document order), 3 nodes", s.ID, s.WorkflowCount, s.Workflows)
		}
	}
	if !slices.Equal(got, []string{"blog", "pct", "shop"}) {
		t.Fatalf("sessions %v, want blog, pct, shop", got)
	}
	shop := page.Sessions[2]
	last := shop.Workflows[0].Last
	if last == nil || last.ID != runs[1].id || last.Status != "FAILURE" || !last.StartedAt.Equal(at.Add(time.Minute)) ||
		!last.EndedAt.Equal(at.Add(time.Minute+time.Second)) {
		t.Errorf("last run of shop/second = %+v, want %s FAILURE (the greatest id, not the latest inserted)", last, runs[1].id)
	}
	if p := shop.Workflows[0].Pause; p != nil {
		t.Errorf("shop/second is not paused, got %+v", p)
	}
	if w := shop.Workflows[1]; w.Last != nil || w.Pause == nil || w.Pause.Actor != "key:ops" || w.Pause.Channel != "mcp" ||
		w.Pause.Reason != "vendor down" || !w.Pause.Since.Equal(at) {
		t.Errorf("shop/first = %+v (pause %+v), want no run and the pause by key:ops via mcp", w, w.Pause)
	}
	if page.Sessions[0].Workflows[0].Last != nil {
		t.Errorf("blog never ran, got %+v", page.Sessions[0].Workflows[0].Last)
	}

	search := func(q string, only []string) []string {
		t.Helper()
		res, err := list.Handle(ctx, sessionapp.ListInput{Query: q, Only: only})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range res.Sessions {
			ids = append(ids, s.ID)
		}
		return ids
	}
	for _, c := range []struct {
		q    string
		only []string
		want []string
	}{
		{"SHOP", nil, []string{"shop"}},               // the id and the description, any case
		{"session b", nil, []string{"blog"}},          // the name ("Session blog")
		{"100%", nil, []string{"shop"}},               // % is a plain character
		{"%", nil, []string{"shop"}},                  // not a wildcard
		{"_", nil, nil},                               // nor is _
		{"session", []string{"pct"}, []string{"pct"}}, // within a limited key's sessions
		{"nothing like it", nil, nil},
	} {
		if got := search(c.q, c.only); !slices.Equal(got, c.want) {
			t.Errorf("search %q (only %v) = %v, want %v", c.q, c.only, got, c.want)
		}
	}
	// A search pages like the list.
	res, err := list.Handle(ctx, sessionapp.ListInput{Query: "session", Limit: 2})
	if err != nil || len(res.Sessions) != 2 || res.NextCursor == "" {
		t.Fatalf("first page of a search: %+v, %v", res, err)
	}
	res, err = list.Handle(ctx, sessionapp.ListInput{Query: "session", Limit: 2, Cursor: res.NextCursor})
	if err != nil || len(res.Sessions) != 1 || res.Sessions[0].ID != "shop" || res.NextCursor != "" {
		t.Fatalf("second page of a search: %+v, %v", res, err)
	}
	for _, q := range []string{strings.Repeat("é", sessionapp.MaxQueryLen+1), "a\x00b", "\xff"} {
		if _, err := list.Handle(ctx, sessionapp.ListInput{Query: q}); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "q") {
			t.Errorf("search %q: got %v, want a violation of q", q, err)
		}
	}
	if _, err := list.Handle(ctx, sessionapp.ListInput{Query: strings.Repeat("é", sessionapp.MaxQueryLen)}); err != nil {
		t.Errorf("a search of %d characters: %v", sessionapp.MaxQueryLen, err)
	}

	// One session's workflows read the same.
	ws, err := sessionapp.NewListWorkflows(store).Handle(ctx, "shop")
	if err != nil || len(ws) != 2 || ws[0].Last == nil || ws[0].Last.ID != runs[1].id || ws[1].Pause == nil {
		t.Fatalf("workflows of shop: %+v, %v", ws, err)
	}
	for _, id := range []string{"nope", "Not An Id"} {
		if _, err := sessionapp.NewListWorkflows(store).Handle(ctx, id); !errors.Is(err, session.ErrSessionNotFound) {
			t.Errorf("workflows of %q: got %v, want ErrSessionNotFound", id, err)
		}
	}

	// The history names who started each run, and through which door.
	hist, err := postgres.NewReader(pool).History(ctx, executionapp.HistoryQuery{SessionID: "shop", Limit: 10})
	if err != nil || len(hist) != 3 || hist[0].ID != runs[1].id || hist[0].Actor != "key:ops" || hist[0].Channel != "rest" {
		t.Fatalf("history of shop: %+v, %v", hist, err)
	}
}

// TestNewestRunOfAQuietWorkflowReadsFewRows: the sessions list's probe for a
// workflow's newest run reads that workflow's runs only, through
// executions_by_workflow (migration 00024), however many runs the other
// workflows of its session have. Without the index it walked
// executions_history past every run of the busy workflow.
func TestNewestRunOfAQuietWorkflowReadsFewRows(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	apply := sessionapp.NewApplySession(postgres.NewTransactor(pool), registry(t), time.Now)
	ctx := t.Context()
	if _, err := apply.Handle(ctx, sessionapp.ApplyInput{ID: "busy", Document: doc("busy", "hot", "quiet")}); err != nil {
		t.Fatal(err)
	}
	// 20,000 runs of hot, newer than quiet's one run.
	if _, err := pool.Exec(ctx, `INSERT INTO executions (execution_id, session_id, workflow_id, status, definition, actor, channel, started_at, ended_at)
		VALUES ('01000000-0000-7000-8000-000000000000', 'busy', 'quiet', 'SUCCESS', '{}', 'key:ops', 'rest', now(), now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO executions (execution_id, session_id, workflow_id, status, definition, actor, channel, started_at, ended_at)
		SELECT ('02000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'busy', 'hot', 'SUCCESS', '{}', 'key:ops', 'rest', now(), now()
		  FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE executions`); err != nil {
		t.Fatal(err)
	}
	var plan []map[string]any
	if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON)
		SELECT e.execution_id FROM executions e
		 WHERE e.session_id = 'busy' AND e.workflow_id = 'quiet'
		 ORDER BY e.execution_id DESC LIMIT 1`).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var walk func(n map[string]any) (index string, removed float64)
	walk = func(n map[string]any) (string, float64) {
		idx, _ := n["Index Name"].(string)
		rm, _ := n["Rows Removed by Filter"].(float64)
		kids, _ := n["Plans"].([]any)
		for _, k := range kids {
			i, r := walk(k.(map[string]any))
			if idx == "" {
				idx = i
			}
			rm += r
		}
		return idx, rm
	}
	idx, removed := walk(plan[0]["Plan"].(map[string]any))
	if idx != "executions_by_workflow" || removed > 0 {
		t.Fatalf("the newest-run probe used index %q and filtered out %v rows; want executions_by_workflow and none\n%v", idx, removed, plan)
	}
}
