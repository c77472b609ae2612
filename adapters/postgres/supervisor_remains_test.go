package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestDeletingAHolderReleasesItsHolds: deleting a supervisor releases its
// holds in the delete's transaction, journaled (HoldReleased, the ADMIN as
// actor), resumes the run whose last hold it was and leaves the run another
// supervisor still holds paused; an ADMIN then releases that hold and the
// run resumes. Nothing of the deleted id is left: no ledger, no cursor, its
// directives' control keys retired (the same key applies anew), its lease
// fenced off.
func TestDeletingAHolderReleasesItsHolds(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	const holder = `{"name":"Holder","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`
	f.supervisor(t, "h1", holder)
	f.supervisor(t, "h2", holder)
	alone, shared := f.startRun(t, "ci", false), f.startRun(t, "ci", false)
	f.waitStatus(t, "RUNNING", alone, shared)
	send := func(sup, body string) supervisorapp.DirectiveResult {
		t.Helper()
		res, err := f.submit.Handle(t.Context(), supervisorapp.SubmitInput{SupervisorID: sup, Directive: svDirective(t, body)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	send("h1", `{"key": "a", "reason": "vendor", "command": {"type": "Hold", "target": "execution:`+alone+`"}}`)
	send("h1", `{"key": "b", "reason": "vendor", "command": {"type": "Hold", "target": "execution:`+shared+`"}}`)
	send("h2", `{"key": "b", "reason": "audit", "command": {"type": "Hold", "target": "execution:`+shared+`"}}`)
	f.waitStatus(t, "PAUSED", alone, shared)
	tx := postgres.NewSupervisorTransactor(f.pool)
	lease, ok, err := f.store.Acquire(t.Context(), "h1", "instance-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}

	// A delegation h1 sent, one sent to it, and a review waiting for its
	// verdict.
	now := time.Now().UTC()
	for _, d := range []struct{ from, parent string }{{"h1", "boss"}, {"h2", "h1"}} {
		del, err := supervisor.NewDelegation(supervisor.DelegationSpec{ID: executionapp.NewID(), Kind: supervisor.Escalate, From: d.from,
			FromParent: d.parent, Key: "k", Payload: json.RawMessage(`{"q":1}`), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.store.OpenDelegation(t.Context(), del, "supervisor:"+d.from, "agent", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.pool.Exec(t.Context(), `INSERT INTO supervisor_reviews (review_id, session_id, command, request, actor, reviewers, next_reviewer,
		asking, timeout_ms, default_decision, deadline, status, steps, created_at)
		VALUES ($1, 'ci', '{}', '{}', 'key:ops', '{h1}', 1, 'h1', 60000, 'DENY', now() + interval '1 hour', 'PENDING', '[]', now())`, executionapp.NewID()); err != nil {
		t.Fatal(err)
	}

	del := supervisorapp.NewDeleteSupervisor(tx, f.control, time.Now)
	res, err := del.Handle(t.Context(), supervisorapp.DeleteInput{ID: "h1", Actor: "key:admin", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Released) != 2 || res.Released[0].ExecutionID != alone || !res.Released[0].Resumed ||
		res.Released[1].ExecutionID != shared || res.Released[1].Resumed || len(res.Released[1].Remaining) != 1 {
		t.Fatalf("released: %+v", res.Released)
	}
	if want := (supervisorapp.Forgotten{Directives: 2, Keys: 2, DelegationsSent: 1, DelegationsExpired: 1, ReviewsDue: 1}); res.Forgotten != want {
		t.Errorf("forgotten: %+v, want %+v (the two directives, the two PAUSE keys, one delegation each way, the review)", res.Forgotten, want)
	}
	f.waitStatus(t, "RUNNING", alone)
	if s := f.status(t, shared); s != "PAUSED" {
		t.Fatalf("the run h2 still holds is %s, want PAUSED", s)
	}
	if n := f.count(t, `SELECT count(*) FROM events WHERE type = 'HoldReleased' AND actor = 'key:admin' AND channel = 'rest'
		AND data->>'supervisorId' = 'h1' AND execution_id IN ($1::uuid, $2::uuid)`, alone, shared); n != 2 {
		t.Errorf("HoldReleased events: %d, want one per run", n)
	}
	if n := f.count(t, `SELECT count(*) FROM events WHERE type = 'SupervisorDeleted' AND data->'releasedHolds' ? $1`, alone); n != 1 {
		t.Errorf("the SupervisorDeleted event does not name the released runs")
	}
	for q, want := range map[string]int{
		`SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'h1'`:                 0,
		`SELECT count(*) FROM supervisor_holds WHERE supervisor_id = 'h1'`:                      0,
		`SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'h2'`:                 1,
		`SELECT count(*) FROM commands WHERE key ~ '^supervisor:h1/[0-9a-f]+$'`:                 0,
		`SELECT count(*) FROM commands WHERE key LIKE 'supervisor:h1/%~deleted-%'`:              2,
		`SELECT count(*) FROM supervisor_delegations WHERE from_id = 'h1'`:                      0,
		`SELECT count(*) FROM supervisor_delegations WHERE to_id = 'h1' AND status = 'EXPIRED'`: 1,
		`SELECT count(*) FROM supervisor_reviews WHERE asking = 'h1' AND deadline <= now()`:     1,
	} {
		if n := f.count(t, q); n != want {
			t.Errorf("%s: %d, want %d", q, n, want)
		}
	}
	if ok, err := f.store.Renew(t.Context(), lease, time.Minute); err != nil || ok {
		t.Errorf("the deleted supervisor's lease renews: %v %v, want it fenced off", ok, err)
	}

	// Created again: the old key applies anew.
	f.supervisor(t, "h1", holder)
	again := send("h1", `{"key": "a", "reason": "vendor", "command": {"type": "Hold", "target": "execution:`+alone+`"}}`)
	if again.Repeated || again.Outcomes[0].Status != supervisorapp.OutcomeApplied {
		t.Fatalf("the old key after re-creation: %+v", again)
	}
	f.waitStatus(t, "PAUSED", alone)

	// An ADMIN releases h2's hold on shared: the last one, so it resumes.
	rh := supervisorapp.NewReleaseHold(tx, f.control, time.Now)
	rel, err := rh.Handle(t.Context(), supervisorapp.ReleaseHoldInput{SessionID: "ci", ExecutionID: shared, SupervisorID: "h2", Reason: "audit done",
		Actor: "key:admin", Channel: "mcp"})
	if err != nil || !rel.Resumed || rel.CommandID == "" || rel.HoldReason != "audit" || len(rel.Remaining) != 0 {
		t.Fatalf("release: %+v %v", rel, err)
	}
	f.waitStatus(t, "RUNNING", shared)
	if n := f.count(t, `SELECT count(*) FROM commands WHERE execution_id = $1::uuid AND action = 'RESUME' AND actor = 'key:admin' AND channel = 'mcp'`, shared); n != 1 {
		t.Errorf("RESUME commands by the ADMIN: %d, want 1", n)
	}
	_, err = rh.Handle(t.Context(), supervisorapp.ReleaseHoldInput{SessionID: "ci", ExecutionID: shared, SupervisorID: "h2", Actor: "key:admin"})
	if !errors.Is(err, supervisor.ErrNotHeld) || !strings.Contains(err.Error(), `supervisor "h2" does not hold execution`) {
		t.Errorf("release again: %v, want ErrNotHeld", err)
	}
	_, err = rh.Handle(t.Context(), supervisorapp.ReleaseHoldInput{SessionID: "other", ExecutionID: alone, SupervisorID: "h1", Actor: "key:admin"})
	if err == nil || !strings.Contains(err.Error(), "Execution not found") {
		t.Errorf("release in another session: %v, want not found", err)
	}
	_, err = rh.Handle(t.Context(), supervisorapp.ReleaseHoldInput{SessionID: "ci", ExecutionID: alone, SupervisorID: "h1", Reason: strings.Repeat("x", 1025)})
	if err == nil || !strings.Contains(err.Error(), "reason") {
		t.Errorf("a reason too long: %v", err)
	}
	if n := f.count(t, `SELECT count(*) FROM supervisor_holds WHERE supervisor_id = 'h1'`); n != 1 {
		t.Errorf("refused releases changed the ledger")
	}
}

// TestDeleteWaitsForAFencedWriteInFlight: an engine of the supervisor is
// saving its first cursor (its transaction holds the lease FOR SHARE and has
// inserted the row, not committed yet) when an ADMIN deletes the supervisor.
// The delete waits for that write and removes its row: no cursor of the
// deleted id is left for a supervisor created again under it.
func TestDeleteWaitsForAFencedWriteInFlight(t *testing.T) {
	t.Parallel()
	f := newSVFixture(t)
	f.supervisor(t, "h1", `{"name":"Holder","engine":{"type":"http","settings":{}},"owns":["session:ci"]}`)
	lease, ok, err := f.store.Acquire(t.Context(), "h1", "instance-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	// What SaveCursor does, held open before its commit.
	write, err := f.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = write.Rollback(context.Background()) }()
	var fenced bool
	if err := write.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM supervisor_leases
		WHERE supervisor_id = 'h1' AND owner = 'instance-a' AND token = $1 FOR SHARE)`, lease.Token).Scan(&fenced); err != nil || !fenced {
		t.Fatalf("fence: %v %v", fenced, err)
	}
	if _, err := write.Exec(t.Context(), `INSERT INTO supervisor_cursors (supervisor_id, seq) VALUES ('h1', 7)`); err != nil {
		t.Fatal(err)
	}

	deleted := make(chan error, 1)
	go func() {
		_, err := supervisorapp.NewDeleteSupervisor(postgres.NewSupervisorTransactor(f.pool), f.control, time.Now).
			Handle(context.Background(), supervisorapp.DeleteInput{ID: "h1", Actor: "key:admin", Channel: "rest"})
		deleted <- err
	}()
	select {
	case err := <-deleted:
		t.Fatalf("the delete did not wait for the fenced write in flight: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := write.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	var left int
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) FROM supervisor_cursors WHERE supervisor_id = 'h1'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d cursor rows of the deleted supervisor are left (%v)", left, err)
	}
}
