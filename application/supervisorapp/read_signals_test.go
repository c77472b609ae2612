package supervisorapp_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// signalsRig is a supervisor "reader" owning session ci, and its reads.
type signalsRig struct {
	e    *env
	read *supervisorapp.ReadSignals
	sup  supervisor.Supervisor
}

func newSignalsRig(t *testing.T) *signalsRig {
	t.Helper()
	e := newEnv(t)
	e.put(t, "reader", `{"name":"Reader","engine":{"type":"http"},"owns":["session:ci"]}`)
	st := postgres.NewSupervisorRuntime(e.pool)
	r := postgres.NewReader(e.pool)
	read := supervisorapp.NewReadSignals(supervisorapp.ReadSignalsDeps{Supervisors: e.store, Events: r, Positions: r,
		Cursors: st, Redactor: plainRedactor{}, Reviews: st, Delegations: st, Poll: 10 * time.Millisecond})
	s, err := e.store.Supervisor(t.Context(), "reader")
	if err != nil {
		t.Fatal(err)
	}
	return &signalsRig{e: e, read: read, sup: s.Supervisor}
}

// event commits one event of session ci and returns its seq.
func (r *signalsRig) event(t *testing.T, typ string) int64 {
	t.Helper()
	var seq int64
	if err := r.e.pool.QueryRow(t.Context(), `INSERT INTO events (at, type, session_id, workflow_id, actor)
		VALUES (clock_timestamp(), $1, 'ci', 'build', 'test') RETURNING seq`, typ).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return seq
}

// page reads after, waiting up to 10 s for a first signal: a commit is
// readable once every older transaction of the cluster (other tests'
// too) has ended.
func (r *signalsRig) page(t *testing.T, after string) (supervisorapp.SignalPage, error) {
	t.Helper()
	return r.read.Handle(t.Context(), supervisorapp.SignalsInput{Supervisor: r.sup, After: after, Wait: 10 * time.Second})
}

// now reads after without waiting.
func (r *signalsRig) now(t *testing.T, after string) (supervisorapp.SignalPage, error) {
	t.Helper()
	return r.read.Handle(t.Context(), supervisorapp.SignalsInput{Supervisor: r.sup, After: after})
}

// types lists the event types of a page's signals.
func types(p supervisorapp.SignalPage) []string {
	var out []string
	for _, s := range p.Signals {
		if e, ok := s.Body().(supervisor.EventSignal); ok {
			out = append(out, e.Type)
		}
	}
	return out
}

// refusedAfter fails unless err refuses the after field with a text that
// contains each of want.
func refusedAfter(t *testing.T, err error, want ...string) string {
	t.Helper()
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok || !errors.Is(err, fault.ErrInvalid) || len(ve.Violations) != 1 || ve.Violations[0].Path != "after" {
		t.Fatalf("got %v, want a refusal of after", err)
	}
	msg := ve.Violations[0].Message
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not say %q", msg, w)
		}
	}
	return msg
}

// TestSignalCursorSurvivesItsEvent: the cursor of a signal whose event was
// deleted still reads on after it, not from the start.
func TestSignalCursorSurvivesItsEvent(t *testing.T) {
	t.Parallel()
	r := newSignalsRig(t)
	r.event(t, "A")
	b := r.event(t, "B")
	p, err := r.page(t, "")
	if err != nil || strings.Join(types(p), ",") != "A,B" {
		t.Fatalf("first read: %v %v, want A,B", types(p), err)
	}
	if _, err := r.e.pool.Exec(t.Context(), `DELETE FROM events WHERE seq = $1`, b); err != nil {
		t.Fatal(err)
	}
	r.event(t, "C")
	next, err := r.page(t, p.Cursor)
	if err != nil || strings.Join(types(next), ",") != "C" {
		t.Fatalf("read after the deleted event's cursor: %v %v, want only C", types(next), err)
	}
}

// TestSignalCursorBeyondTheHead: a cursor past the head (well formed, or
// an older server's bare seq) is refused naming the head, which reads on
// with only what comes next. A cursor given is never beyond a later head,
// however many events are deleted.
func TestSignalCursorBeyondTheHead(t *testing.T) {
	t.Parallel()
	r := newSignalsRig(t)
	seq := r.event(t, "A")
	p, err := r.page(t, "")
	if err != nil || len(p.Signals) != 1 {
		t.Fatalf("first read: %v %v", types(p), err)
	}
	given, _ := supervisor.ParseCursor(p.Cursor)
	for _, beyond := range []string{
		supervisor.FormatCursor(supervisor.Position{XID: given.XID + 1_000_000, Seq: 1}),
		supervisor.FormatCursor(supervisor.Position{XID: given.XID, Seq: given.Seq + 1_000_000}),
		strconv.FormatInt(seq+1_000_000, 10),
	} {
		_, err := r.now(t, beyond)
		msg := refusedAfter(t, err, beyond, "beyond the head", "leave after out")
		head := msg[strings.Index(msg, "head of the signal sequence, ")+len("head of the signal sequence, "):]
		head = head[:strings.Index(head, ";")]
		if _, err := supervisor.ParseCursor(head); err != nil {
			t.Fatalf("the head %q named in %q is not a cursor: %v", head, msg, err)
		}
		if next, err := r.now(t, head); err != nil || len(next.Signals) != 0 {
			t.Fatalf("read after the head %s: %v %v, want nothing", head, types(next), err)
		}
	}
	// Every event deleted: the cursor given is still not beyond the head.
	if _, err := r.e.pool.Exec(t.Context(), `DELETE FROM events`); err != nil {
		t.Fatal(err)
	}
	if next, err := r.now(t, p.Cursor); err != nil || len(next.Signals) != 0 {
		t.Fatalf("read after a given cursor once every event is deleted: %v %v", types(next), err)
	}
}

// TestSignalCursorOfAnOlderServer: a bare seq reads on after its event
// while the event exists, and is refused (not read from the start) once it
// is gone.
func TestSignalCursorOfAnOlderServer(t *testing.T) {
	t.Parallel()
	r := newSignalsRig(t)
	a := r.event(t, "A")
	r.event(t, "B")
	p, err := r.page(t, strconv.FormatInt(a, 10))
	if err != nil || strings.Join(types(p), ",") != "B" {
		t.Fatalf("read after an older server's cursor: %v %v, want B", types(p), err)
	}
	if _, err := r.e.pool.Exec(t.Context(), `DELETE FROM events WHERE seq = $1`, a); err != nil {
		t.Fatal(err)
	}
	_, err = r.now(t, strconv.FormatInt(a, 10))
	refusedAfter(t, err, "older server", "no longer exists", "leave after out")
	for _, bad := range []string{"x", "1.2", "0", "-3"} {
		_, err := r.now(t, bad)
		refusedAfter(t, err, "not one this server gave")
	}
}

// TestSnapshotCursorReadsOn: the snapshot's cursor (the head) is one a
// read takes.
func TestSnapshotCursorReadsOn(t *testing.T) {
	t.Parallel()
	r := newSignalsRig(t)
	r.event(t, "A")
	if p, err := r.page(t, ""); err != nil || len(p.Signals) != 1 {
		t.Fatalf("read A: %v %v", types(p), err)
	}
	// A is readable, so it lies at or before the head from now on.
	head, err := postgres.NewReader(r.e.pool).Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.event(t, "B")
	p, err := r.page(t, supervisor.FormatCursor(head))
	if err != nil || strings.Join(types(p), ",") != "B" {
		t.Fatalf("read after the head: %v %v, want B", types(p), err)
	}
}
