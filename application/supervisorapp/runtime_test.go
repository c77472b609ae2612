package supervisorapp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// The runtime is tested here over fakes of its ports, with engines that
// record what they are handed; the engines' own tests are beside them
// (application/engines/...), and adapters/postgres drives the runtime and
// the engines together over the real store.

var t0 = time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)

// guardSupervisor is a rules supervisor "guard" owning session ci.
func guardSupervisor(t *testing.T) supervisor.Supervisor {
	t.Helper()
	sup, err := supervisor.Parse([]byte(`{"name":"Guard","engine":{"type":"rules","settings":{"rules":[{"id":"a","when":{"event":"NodeStatusChanged"},"then":{"command":"PauseWorkflow"}}]}},"owns":["session:ci"]}`),
		supervisor.ParseOptions{ID: "guard"})
	if err != nil {
		t.Fatal(err)
	}
	return sup
}

// outbox is an EventTail over a list the test appends to.
type outbox struct{ evs []executionapp.StoredEvent }

func (o *outbox) EventHead(context.Context) (int64, error) {
	if len(o.evs) == 0 {
		return 0, nil
	}
	return o.evs[len(o.evs)-1].Seq, nil
}

func (o *outbox) Events(_ context.Context, q executionapp.EventQuery) ([]executionapp.StoredEvent, error) {
	var out []executionapp.StoredEvent
	for _, e := range o.evs {
		if (supervisor.Position{XID: q.AfterXID, Seq: q.AfterSeq}).Before(EventPosition(e)) && len(out) < q.Limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// add appends a node status change of run (workflow ci/build) to the
// outbox.
func (o *outbox) add(run, node, to string) { o.addIn("ci", run, node, to) }

// addIn appends a node status change of run of workflow build of session.
func (o *outbox) addIn(session, run, node, to string) {
	seq := int64(len(o.evs) + 1)
	o.evs = append(o.evs, executionapp.StoredEvent{XID: uint64(100 + seq), Seq: seq, Event: executionapp.Event{Type: executionapp.EventNodeStatusChanged,
		At: t0.Add(time.Duration(seq) * time.Second), SessionID: session, WorkflowID: "build", ExecutionID: run, NodeID: node,
		Actor: "engine", Channel: "engine", Data: map[string]any{"from": "RUNNING", "to": to}}})
}

// asIs redacts nothing.
type asIs struct{}

func (asIs) Redact(_ context.Context, e executionapp.StoredEvent) (map[string]any, error) {
	return e.Data, nil
}

// memCursors keeps the cursors saved.
type memCursors struct{ saved []Cursor }

func (c *memCursors) Cursor(context.Context, string) (Cursor, bool, error) {
	return Cursor{}, false, nil
}

func (c *memCursors) CreatedAt(context.Context, string) (supervisor.Position, bool, error) {
	return supervisor.Position{}, false, nil
}

func (c *memCursors) SaveCursor(_ context.Context, _ Fence, cur Cursor) error {
	c.saved = append(c.saved, cur)
	return nil
}

// batchRecorder is a BatchEngine that records what it is told and fails
// the signal of seq failAt.
type batchRecorder struct {
	log    []string
	failAt int64
}

func (b *batchRecorder) BeginBatch(runs []string) {
	b.log = append(b.log, fmt.Sprintf("begin %v", runs))
}
func (b *batchRecorder) EndBatch()              { b.log = append(b.log, "end") }
func (b *batchRecorder) State() ([]byte, error) { return nil, nil }
func (b *batchRecorder) Handle(_ context.Context, sig supervisor.Signal) error {
	p, _ := supervisor.ParseCursor(sig.Cursor())
	b.log = append(b.log, strconv.FormatInt(p.Seq, 10))
	if p.Seq == b.failAt {
		return errors.New("down")
	}
	return nil
}

// TestPumpBracketsEachBatch: the runtime tells a BatchEngine where each
// batch begins, with the runs of its owned events, and ends, a failed one
// included.
func TestPumpBracketsEachBatch(t *testing.T) {
	t.Parallel()
	sup := guardSupervisor(t)
	o := &outbox{}
	rt := NewRuntime(RuntimeDeps{Events: o, Cursors: &memCursors{}, Redactor: asIs{}}, RuntimeConfig{})
	eng := &batchRecorder{failAt: 6}
	var cur Cursor
	o.add("r1", "a", "SUCCESS")
	o.addIn("other", "r9", "a", "SUCCESS") // not owned: not delivered
	o.add("r2", "a", "SUCCESS")
	o.add("r1", "b", "SUCCESS")
	if _, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err != nil {
		t.Fatal(err)
	}
	o.add("r3", "c", "SUCCESS")
	o.add("r3", "d", "SUCCESS")
	o.add("r4", "e", "SUCCESS")
	if _, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err == nil {
		t.Fatal("a batch whose signal failed: got no error")
	}
	want := []string{"begin [r1 r2]", "1", "3", "4", "end", "begin [r3 r4]", "5", "6", "end"}
	if !slices.Equal(eng.log, want) {
		t.Errorf("engine calls: got %v, want %v", eng.log, want)
	}
}

// TestCursorStopsBeforeAFailedSignal: the cursor moves only past signals
// handled. A signal the engine failed stops the batch: the cursor is saved
// at the signal before it, and the failed signal comes again on the next
// read (the rules engine's part, a condition whose facts could not be
// read, is its TestAFailedFactsReadFailsTheSignal).
func TestCursorStopsBeforeAFailedSignal(t *testing.T) {
	t.Parallel()
	sup := guardSupervisor(t)
	o := &outbox{}
	cursors := &memCursors{}
	rt := NewRuntime(RuntimeDeps{Events: o, Cursors: cursors, Redactor: asIs{}}, RuntimeConfig{})
	eng := &batchRecorder{failAt: 2}
	var cur Cursor
	o.add("r1", "a", "SUCCESS")
	o.add("r2", "a", "FAILURE") // the engine fails on it
	o.add("r1", "b", "SUCCESS")
	if _, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err == nil {
		t.Fatal("a batch whose signal failed: got no error")
	}
	if want := EventPosition(o.evs[0]); cur.Pos != want || len(cursors.saved) != 1 || cursors.saved[0].Pos != want {
		t.Fatalf("cursor after the failed signal: got %+v (saves %+v), want %+v, the signal before it", cur.Pos, cursors.saved, want)
	}
	eng.failAt = 0 // the engine recovers
	if n, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err != nil || n != 2 {
		t.Fatalf("the read after: %d events, %v; want the failed signal and the one after it", n, err)
	}
	if want := []string{"begin [r1 r2]", "1", "2", "end", "begin [r2 r1]", "2", "3", "end"}; !slices.Equal(eng.log, want) {
		t.Errorf("engine calls: got %v, want %v", eng.log, want)
	}
	if want := EventPosition(o.evs[2]); cur.Pos != want {
		t.Fatalf("cursor: got %+v, want %+v", cur.Pos, want)
	}
}

// TestCursorNeverMovesBackInThePump: each save of the pump is after the one
// before it, failed batches included.
func TestCursorNeverMovesBackInThePump(t *testing.T) {
	sup := guardSupervisor(t)
	o := &outbox{}
	cursors := &memCursors{}
	rt := NewRuntime(RuntimeDeps{Events: o, Cursors: cursors, Redactor: asIs{}}, RuntimeConfig{Batch: 2})
	eng := &batchRecorder{failAt: 4}
	var cur Cursor
	for range 7 {
		o.add("r1", "a", "SUCCESS")
	}
	for range 10 {
		_, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur)
		if err != nil {
			eng.failAt = 0 // the engine recovers
		}
	}
	var last supervisor.Position
	for i, c := range cursors.saved {
		if !last.Before(c.Pos) {
			t.Fatalf("save %d at %+v does not come after %+v", i, c.Pos, last)
		}
		last = c.Pos
	}
	if want := EventPosition(o.evs[6]); last != want {
		t.Fatalf("last save: got %+v, want %+v", last, want)
	}
}

// TestRuntimeHandsAnEngineOnlyWhatItsSupervisorHears: the runtime, not
// each engine, keeps back what a supervisor does not hear
// (supervisor.Hears): the events its own directives caused, from every
// engine that decides inside the server; the http engine, whose system
// reads the agent API's feed, gets them. Either way the cursor moves past
// them.
func TestRuntimeHandsAnEngineOnlyWhatItsSupervisorHears(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		engine, settings string
		want             []string
	}{
		{"rules", `{"rules":[{"id":"a","when":{"event":"NodeStatusChanged"},"then":{"command":"PauseWorkflow"}}]}`, []string{"1", "3"}},
		{"process", `{"command":"/bin/true"}`, []string{"1", "3"}},
		{"workflow", `{"sessionId":"supervisors","workflowId":"triage","events":["NodeStatusChanged"]}`, []string{"1", "3"}},
		{"http", `{}`, []string{"1", "2", "3"}},
	} {
		t.Run(c.engine, func(t *testing.T) {
			t.Parallel()
			sup, err := supervisor.Parse([]byte(`{"name":"Guard","engine":{"type":"`+c.engine+`","settings":`+c.settings+`},"owns":["session:ci"]}`),
				supervisor.ParseOptions{ID: "guard"})
			if err != nil {
				t.Fatal(err)
			}
			o := &outbox{}
			for _, actor := range []string{"engine", Actor("guard"), Actor("other")} {
				o.add("r1", "a", "FAILURE")
				o.evs[len(o.evs)-1].Actor = actor
			}
			cursors := &memCursors{}
			rt := NewRuntime(RuntimeDeps{Events: o, Cursors: cursors, Redactor: asIs{}}, RuntimeConfig{})
			eng := &batchRecorder{}
			var cur Cursor
			if n, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err != nil || n != 3 {
				t.Fatalf("pump: %d events, %v", n, err)
			}
			handed := slices.DeleteFunc(slices.Clone(eng.log), func(s string) bool { return s == "end" || s[0] == 'b' })
			if !slices.Equal(handed, c.want) {
				t.Errorf("signals handed: got %v, want %v", handed, c.want)
			}
			if want := EventPosition(o.evs[2]); cur.Pos != want || len(cursors.saved) != 1 {
				t.Errorf("cursor: got %+v after %d saves, want %+v after 1: past the signals not heard too", cur.Pos, len(cursors.saved), want)
			}
		})
	}
}
