package postgres_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestDelegationStoreOnceByKeyAnsweredOnce: the same key from the same
// sender opens one delegation (another sender's same key opens its own);
// of two concurrent answers one wins and the other is a conflict; each
// change appends its event, with no session, in the same transaction.
func TestDelegationStoreOnceByKeyAnsweredOnce(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	st := postgres.NewSupervisorRuntime(pool)
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	open := func(from, key string) (supervisor.Delegation, bool) {
		t.Helper()
		d, err := supervisor.NewDelegation(supervisor.DelegationSpec{ID: executionapp.NewID(), Kind: supervisor.Escalate, From: from,
			FromParent: "boss", Key: key, Payload: json.RawMessage(`{"q":1}`), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		stored, created, err := st.OpenDelegation(ctx, d, "supervisor:"+from, "agent", nil)
		if err != nil {
			t.Fatal(err)
		}
		return stored, created
	}
	d, created := open("child", "k")
	if !created || d.Status() != supervisor.DelegationOpen || d.To() != "boss" || d.Answer() != nil || !d.Deadline().Equal(now.Add(supervisor.DefaultDelegationTTL)) {
		t.Fatalf("open = %+v, %v", d.Record(), created)
	}
	if again, created := open("child", "k"); created || again.ID() != d.ID() {
		t.Fatalf("same key opened %s (created %v)", again.ID(), created)
	}
	if other, created := open("other", "k"); !created || other.ID() == d.ID() {
		t.Fatal("another sender's key did not open its own")
	}

	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.ChangeDelegation(ctx, d.ID(), "supervisor:boss", "agent", nil, func(cur supervisor.Delegation) (supervisor.Delegation, error) {
				err := cur.Respond("boss", json.RawMessage(`{"n":`+string(rune('0'+i))+`}`), now)
				return cur, err
			})
		}()
	}
	wg.Wait()
	ok, settled := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, supervisor.ErrDelegationSettled):
			settled++
		default:
			t.Fatal(err)
		}
	}
	if ok != 1 || settled != 1 {
		t.Fatalf("answers: %d ok, %d settled", ok, settled)
	}
	got, found, err := st.Delegation(ctx, d.ID())
	if err != nil || !found || got.Status() != supervisor.DelegationAnswered || got.Answer() == nil || got.AnsweredAt().IsZero() {
		t.Fatalf("read = %+v, %v, %v", got.Record(), found, err)
	}
	if _, found, _ := st.Delegation(ctx, "not-a-uuid"); found {
		t.Fatal("found a delegation by a bad id")
	}
	if _, err := st.ChangeDelegation(ctx, executionapp.NewID(), "", "", nil, nil); !errors.Is(err, supervisor.ErrDelegationNotFound) {
		t.Fatalf("change of none = %v", err)
	}

	// An engine that lost its lease opens and answers nothing.
	stale := &supervisorapp.Fence{SupervisorID: "child", Owner: "gone", Token: 1}
	late, _ := supervisor.NewDelegation(supervisor.DelegationSpec{ID: executionapp.NewID(), Kind: supervisor.Escalate, From: "child",
		FromParent: "boss", Key: "late", Payload: json.RawMessage(`1`), Now: now})
	if _, _, err := st.OpenDelegation(ctx, late, "supervisor:child", "process", stale); !errors.Is(err, supervisorapp.ErrLeaseLost) {
		t.Fatalf("open under a stale lease = %v", err)
	}
	if _, err := st.ChangeDelegation(ctx, d.ID(), "supervisor:boss", "process", stale, nil); !errors.Is(err, supervisorapp.ErrLeaseLost) {
		t.Fatalf("change under a stale lease = %v", err)
	}

	var requested, answered int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE type = 'DelegationRequested'), count(*) FILTER (WHERE type = 'DelegationAnswered')
		FROM events WHERE session_id = '' AND data->>'delegationId' IS NOT NULL`).Scan(&requested, &answered); err != nil {
		t.Fatal(err)
	}
	if requested != 2 || answered != 1 {
		t.Fatalf("events: %d requested, %d answered", requested, answered)
	}
}
