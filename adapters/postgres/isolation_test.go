package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// countingRunners counts every run of the real runners by item, so a test
// can prove that no plugin ran twice for one message.
type countingRunners struct {
	inner executionapp.Runners
	mu    sync.Mutex
	runs  map[string]int // execution/node/item
}

func (c *countingRunners) Runner(typ string) (executionapp.Runner, bool) {
	r, ok := c.inner.Runner(typ)
	if !ok {
		return nil, false
	}
	return countedRunner{r, c}, true
}

type countedRunner struct {
	executionapp.Runner
	c *countingRunners
}

func (r countedRunner) Run(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	r.c.mu.Lock()
	r.c.runs[fmt.Sprintf("%s/%s/%d", in.ExecutionID, in.NodeID, in.ItemID)]++
	r.c.mu.Unlock()
	return r.Runner.Run(ctx, in)
}

// TestOneBadValueFailsOnlyItsNode mixes clean runs with runs whose node
// emits a value PostgreSQL cannot store, all claimed and committed together:
//   - "nul": a TRANSFORM yields a string holding U+0000, caught before SQL;
//   - "big": a TRANSFORM yields a 2 MB value, over the 1 MiB message limit;
//   - "refused": a value the engine cannot know is bad, which the database
//     refuses (a trigger raising data exception 22023, as jsonb does for
//     U+0000), caught by splitting the batch.
//
// Every clean run must succeed, every poisoned run fail with its reason, and
// every plugin run exactly once per message: no batch is retried whole.
func TestOneBadValueFailsOnlyItsNode(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	if _, err := pool.Exec(ctx, `
		CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.payload ? 'poison' THEN
				RAISE EXCEPTION 'poison is not storable' USING ERRCODE = '22023';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_poison BEFORE INSERT ON work_items FOR EACH ROW EXECUTE FUNCTION refuse_poison();`); err != nil {
		t.Fatal(err)
	}
	wf := func(id, expr string) string {
		return fmt.Sprintf(`{"workflowId":%q,"nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"t","type":"TRANSFORM","config":{"expression":%q,"retry":{"maxAttempts":3,"backoff":"1ms"}}},
			{"nodeId":"out","type":"RESULT"}],
		 "edges":[{"source":"start","target":"t"},{"source":"t","target":"out"}]}`, id, expr)
	}
	session := `{"sessionId":"iso","name":"isolation","workflows":[` + strings.Join([]string{
		wf("clean", `{"n": payload.n + 1}`),
		wf("nul", `{"x": "a\u0000b"}`),
		wf("big", `{"l": [1, 2].map(i, payload.s)}`),
		wf("refused", `{"poison": true}`),
	}, ",") + `]}`
	real, err := plugins.NewRunners(plugins.RunnerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	runners := &countingRunners{inner: real, runs: map[string]int{}}
	var engineErrs []string
	var errMu sync.Mutex
	f := newEngineFixture(t, pool, "iso", session, runners, func(op string, err error) {
		errMu.Lock()
		engineErrs = append(engineErrs, op+": "+err.Error())
		errMu.Unlock()
	}, executionapp.EngineConfig{Concurrency: 64, CommitBatch: 256, Poll: 20 * time.Millisecond, Lease: 2 * time.Second})

	// Everything is queued before the engine starts, so the poisoned items
	// are claimed and committed in the same batches as the clean ones.
	start := f.start
	want := map[string]string{}
	begin := func(wf, payload string) {
		res, err := start.Handle(ctx, executionapp.StartInput{SessionID: "iso", WorkflowID: wf, Trigger: executionapp.TriggerManual,
			Payload: mustJSON(t, payload), Actor: "test", Channel: "rest"})
		if err != nil {
			t.Fatal(err)
		}
		want[res.ExecutionID] = wf
	}
	for i := range 40 {
		begin("clean", fmt.Sprintf(`{"n": %d}`, i))
		if i%10 == 0 {
			begin("nul", `{}`)
			begin("big", `{"s": "`+strings.Repeat("x", 600_000)+`"}`)
			begin("refused", `{}`)
		}
	}
	f.run(t)

	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	got := waitEnded(t, pool, ids)
	reasons := map[string]string{
		"nul":     `CEL expression "{\"x\": \"a\\u0000b\"}": value.x: contains U+0000 (NUL), which PostgreSQL cannot store`,
		"big":     "message: the message is larger than the limit of 1 MiB; raise YUKTA_MAX_MESSAGE_BYTES",
		"refused": "its output could not be stored: a value cannot be stored (data exception 22023)",
	}
	for id, wf := range want {
		var errText string
		if err := pool.QueryRow(ctx, `SELECT coalesce(error, '') FROM executions WHERE execution_id = $1`, id).Scan(&errText); err != nil {
			t.Fatal(err)
		}
		if wf == "clean" {
			if got[id] != "SUCCESS" {
				t.Errorf("clean run %s: %s (%s), want SUCCESS", id, got[id], errText)
			}
			continue
		}
		if got[id] != "FAILURE" || !strings.Contains(errText, "node t failed: "+reasons[wf]) {
			t.Errorf("%s run %s: %s with %q, want FAILURE naming %q", wf, id, got[id], errText, reasons[wf])
		}
	}
	// No plugin ran twice for one message: a bad value is permanent (the
	// node's retry policy does not re-run a value error) and no batch is
	// retried whole.
	runners.mu.Lock()
	defer runners.mu.Unlock()
	for key, n := range runners.runs {
		if n != 1 {
			t.Errorf("%s ran %d times, want 1", key, n)
		}
	}
	if wantRuns := 40*3 + 12*2; len(runners.runs) != wantRuns {
		t.Errorf("%d plugin runs, want %d (3 per clean run, 2 per poisoned one)", len(runners.runs), wantRuns)
	}
	// The database refused the "refused" results alone; nothing else failed.
	errMu.Lock()
	defer errMu.Unlock()
	for _, e := range engineErrs {
		if !strings.Contains(e, "the database refused the attempt's data") {
			t.Errorf("unexpected engine error: %s", e)
		}
	}
	if len(engineErrs) != 4 {
		t.Errorf("%d isolated results, want 4 (the refused runs): %v", len(engineErrs), engineErrs)
	}
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s), "payload")
	if err != nil {
		t.Fatal(err)
	}
	return v
}
