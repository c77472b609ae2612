package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// cursorQuietWindow is how long the test watches an engine's stored cursor
// after a retention pass with nothing new to read: long enough for several
// of the runtime's outbox reads (every 250 ms), in which a rewinding engine
// would store a smaller cursor.
const cursorQuietWindow = 2 * time.Second

// cursorSession has a napping workflow and a quick one that ends at once.
const cursorSession = `{"name":"cursors","workflows":[
 {"workflowId":"nap","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"nap","type":"DELAY","config":{"duration":"120s"}},{"nodeId":"out","type":"RESULT"}],
  "edges":[{"source":"in","target":"nap"},{"source":"nap","target":"out"}]},
 {"workflowId":"quick","nodes":[{"nodeId":"in","type":"MANUAL"},{"nodeId":"out","type":"RESULT"}],
  "edges":[{"source":"in","target":"out"}]}]}`

// TestSignalCursorsNeverRewind is hole 2 of issue 21 on the real binary: a
// cursor whose event was deleted reads on after it (nothing from before,
// nothing from before the supervisor existed); a cursor beyond the head is
// refused with a 400 that names the head; and a rules engine's stored
// cursor never goes down across a retention pass that deletes the events
// under it.
func TestSignalCursorsNeverRewind(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn, Args: []string{"--retention-days", "30", "--retention-interval", "1s"}})
	db, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	w := &agentWorld{reviewWorld: &reviewWorld{t: t, s: s, db: db}}

	// A run from before the supervisor existed: its events must never
	// reach it.
	w.put("/api/sessions/ci", napSession("ci"))
	before := w.napping("ci")
	w.setup()

	t.Run("a cursor whose event was deleted reads on after it", func(t *testing.T) {
		w := &agentWorld{reviewWorld: w.in(t), token: w.token}
		delivered := map[string]bool{} // "seq" of every EVENT delivered
		read := func(after string, wait int) signalPage {
			t.Helper()
			st, b, _ := w.agent("GET", fmt.Sprintf("/signals?limit=500&wait=%d&after=%s", wait, url.QueryEscape(after)), nil)
			var p signalPage
			if st != 200 || json.Unmarshal(b, &p) != nil {
				t.Fatalf("GET /signals after %q: %d %s", after, st, b)
			}
			return p
		}
		// until reads from after until the ExecutionStarted of run, and
		// returns the cursor of that signal.
		until := func(after, run string) string {
			t.Helper()
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
				p := read(after, 5)
				for _, s := range p.Signals {
					if s.Kind != "EVENT" {
						continue
					}
					delivered[fmt.Sprint(s.Signal["seq"])] = true
					if s.Signal["executionId"] == before {
						t.Fatalf("a signal of run %s, which started before the supervisor existed: %v", before, s.Signal)
					}
					if s.Signal["type"] == "ExecutionStarted" && s.Signal["executionId"] == run {
						return s.Cursor
					}
				}
				after = p.Cursor
			}
			t.Fatalf("no ExecutionStarted of %s within 30 s", run)
			return ""
		}
		b := w.napping("ci")
		cur := until("", b)
		a := w.napping("ci")
		cur = until(cur, a)
		// The event under the cursor goes, as a retention pass deletes a
		// run's events.
		if tag, err := db.Exec(context.Background(), `DELETE FROM events WHERE execution_id = $1::uuid`, a); err != nil || tag.RowsAffected() == 0 {
			t.Fatalf("delete the events of %s: %v (%d rows)", a, err, tag.RowsAffected())
		}
		p := read(cur, 0)
		for _, s := range p.Signals {
			if delivered[fmt.Sprint(s.Signal["seq"])] || s.Signal["executionId"] == before {
				t.Errorf("the read after a deleted cursor returned a signal from before it: %v", s.Signal)
			}
		}
		if t.Failed() {
			t.Fatalf("%d signals after cursor %s, some from before it: the cursor rewound", len(p.Signals), cur)
		}
		// And nothing committed after it is skipped.
		c := w.napping("ci")
		until(cur, c)
	})

	t.Run("a cursor beyond the head is refused naming the head", func(t *testing.T) {
		w := &agentWorld{reviewWorld: w.in(t), token: w.token}
		st, b, _ := w.agent("GET", "/signals?after=999999999", nil)
		if st != 400 {
			t.Fatalf("GET /signals after a cursor beyond the head: %d %s, want 400", st, b)
		}
		text := string(b)
		m := regexp.MustCompile(`after=(\S+) to read only what comes next`).FindStringSubmatch(text)
		if !strings.Contains(text, "beyond the head") || m == nil || !strings.Contains(text, "after") {
			t.Fatalf("the refusal does not name the head and the next step: %s", b)
		}
		for _, leak := range []string{"SQLSTATE", "strconv", "pgx", "panic"} {
			if strings.Contains(text, leak) {
				t.Errorf("the refusal carries %q: %s", leak, b)
			}
		}
		// The head it names is a cursor: reading after it returns only
		// what comes next.
		st, b, _ = w.agent("GET", "/signals?wait=0&after="+url.QueryEscape(m[1]), nil)
		var p signalPage
		if st != 200 || json.Unmarshal(b, &p) != nil || len(p.Signals) != 0 {
			t.Fatalf("GET /signals after the head %s: %d %s, want 200 and no signal", m[1], st, b)
		}
	})

	t.Run("retention never moves an engine's stored cursor back", func(t *testing.T) {
		w := w.in(t)
		w.put("/api/sessions/cursors", []byte(cursorSession))
		w.put("/api/supervisors/guard", []byte(`{"name":"Guard","owns":["session:cursors"],"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
			{"id":"never","when":{"event":"NodeStatusChanged","status":"FAILURE"},"then":{"command":"PauseWorkflow"}}]}}}`))
		ctx := context.Background()
		var samples []cursorSample
		sample := func() cursorSample {
			t.Helper()
			var c cursorSample
			// to_jsonb reads the xid on a schema that has one and "0" on one
			// that has only the seq.
			err := db.QueryRow(ctx, `SELECT seq, coalesce(to_jsonb(c)->>'xid', '0') FROM supervisor_cursors c WHERE supervisor_id = 'guard'`).
				Scan(&c.seq, &c.xid)
			if err != nil {
				c.seq = -1
			}
			if c.seq >= 0 && (len(samples) == 0 || samples[len(samples)-1] != c) {
				samples = append(samples, c)
			}
			return c
		}
		// caughtUp waits until the stored cursor is at the session's newest
		// event.
		caughtUp := func(what string) {
			t.Helper()
			poll(t, 30*time.Second, what, func() bool {
				c := sample()
				var newest int64
				_ = db.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE session_id = 'cursors'`).Scan(&newest)
				return c.seq >= 0 && c.seq >= newest
			})
		}
		startIn := func(wf string) string {
			t.Helper()
			st, b, _ := call(t, w.s, "POST", "/api/sessions/cursors/workflows/"+wf+"/executions", "", []byte(`{"payload":{}}`))
			var out struct{ ExecutionId string }
			if st != 201 || json.Unmarshal(b, &out) != nil {
				t.Fatalf("start %s: %d %s", wf, st, b)
			}
			return out.ExecutionId
		}
		// A run that stays (its events remain, older than the cursor), then
		// a run that ends and whose events are the newest.
		startIn("nap")
		quick := startIn("quick")
		poll(t, 30*time.Second, "the quick run ending", func() bool {
			var ended bool
			_ = db.QueryRow(ctx, `SELECT ended_at IS NOT NULL FROM executions WHERE execution_id = $1::uuid`, quick).Scan(&ended)
			return ended
		})
		caughtUp("the guard handling the quick run")
		// Retention deletes the quick run, and with it the events under the
		// stored cursor.
		if _, err := db.Exec(ctx, `UPDATE executions SET ended_at = ended_at - interval '31 days' WHERE execution_id = $1::uuid`, quick); err != nil {
			t.Fatal(err)
		}
		poll(t, 60*time.Second, "the retention pass deleting the quick run", func() bool {
			sample()
			var gone bool
			_ = db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deleted_executions WHERE execution_id = $1::uuid)`, quick).Scan(&gone)
			return gone
		})
		for end := time.Now().Add(cursorQuietWindow); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			sample()
		}
		// What commits next is handled, after the cursor.
		startIn("quick")
		caughtUp("the guard handling the run after the retention pass")
		for i := 1; i < len(samples); i++ {
			if samples[i].less(samples[i-1]) {
				t.Fatalf("the stored cursor went down from %v to %v (samples %v): the engine rewound", samples[i-1], samples[i], samples)
			}
		}
		t.Logf("stored cursor samples across the retention pass: %v", samples)
	})
}

// cursorSample is a stored engine cursor: its xid ("0" on a schema without
// one) and its seq.
type cursorSample struct {
	seq int64
	xid string
}

// less orders samples by (xid, seq).
func (c cursorSample) less(d cursorSample) bool {
	x, _ := new(big.Int).SetString(c.xid, 10)
	y, _ := new(big.Int).SetString(d.xid, 10)
	if x == nil || y == nil {
		return c.seq < d.seq
	}
	if k := x.Cmp(y); k != 0 {
		return k < 0
	}
	return c.seq < d.seq
}

func (c cursorSample) String() string { return c.xid + "/" + fmt.Sprint(c.seq) }
