package supervisorapp

import (
	"context"
	"errors"
	"testing"

	"github.com/yukta/yukta/domain/supervisor"
)

// downRuns is a run directory whose facts cannot be read while down.
type downRuns struct {
	*countingRuns
	down bool
}

func (r *downRuns) Facts(ctx context.Context, id string) (RunFacts, bool, error) {
	if r.down {
		return RunFacts{}, false, errors.New("database unreachable")
	}
	return r.countingRuns.Facts(ctx, id)
}

func (r *downRuns) FactsMany(ctx context.Context, ids []string) (map[string]RunFacts, error) {
	if r.down {
		return nil, errors.New("database unreachable")
	}
	return r.countingRuns.FactsMany(ctx, ids)
}

// TestCursorStopsBeforeAFailedSignal: the cursor moves only past signals
// handled. A signal the engine failed (here the rules engine, whose
// condition needs facts the database did not give) stops the batch: the
// cursor is saved at the signal before it, and the failed signal comes
// again on the next read, where it fires.
func TestCursorStopsBeforeAFailedSignal(t *testing.T) {
	rules := `[{"id":"fail","when":{"event":"NodeStatusChanged","status":"FAILURE","if":"execution.status == 'RUNNING'"},"then":{"command":"PauseWorkflow"}}]`
	sup, _ := rulesSupervisor(t, rules)
	runs := &downRuns{countingRuns: newCountingRuns("r1", "r2")}
	send := &sender{}
	eng := rulesEngineOver(t, rules, runs, send)
	o := &outbox{}
	cursors := &memCursors{}
	rt := NewRuntime(RuntimeDeps{Events: o, Cursors: cursors, Redactor: asIs{}}, RuntimeConfig{})
	var cur Cursor
	o.add("r1", "a", "SUCCESS") // handled: no rule reads its facts
	o.add("r2", "a", "FAILURE") // its rule needs r2's facts
	o.add("r1", "b", "SUCCESS")
	runs.down = true
	if _, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err == nil {
		t.Fatal("a batch whose facts could not be read: got no error")
	}
	if want := EventPosition(o.evs[0]); cur.Pos != want || len(cursors.saved) != 1 || cursors.saved[0].Pos != want {
		t.Fatalf("cursor after the failed signal: got %+v (saves %+v), want %+v, the signal before it", cur.Pos, cursors.saved, want)
	}
	if len(send.sent) != 0 {
		t.Fatalf("directives sent while the facts were unread: %v", send.sent)
	}
	runs.down = false
	if n, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err != nil || n != 2 {
		t.Fatalf("the read after: %d events, %v; want the failed signal and the one after it", n, err)
	}
	if len(send.sent) != 1 {
		t.Fatalf("directives after the failed signal came again: got %d, want 1", len(send.sent))
	}
	if want := EventPosition(o.evs[2]); cur.Pos != want {
		t.Fatalf("cursor: got %+v, want %+v", cur.Pos, want)
	}
}

// TestCursorNeverMovesBackInThePump: each save of the pump is after the one
// before it, failed batches included.
func TestCursorNeverMovesBackInThePump(t *testing.T) {
	sup, _ := rulesSupervisor(t, `[`+neverHolds("a", "event.nodeId == 'x'")+`]`)
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
