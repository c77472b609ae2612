package supervisorapp_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

type plainRedactor struct{}

func (plainRedactor) Redact(_ context.Context, e executionapp.StoredEvent) (map[string]any, error) {
	return e.Data, nil
}

// TestEscalateReachesTheParentAndTheAnswerComesBack: an ESCALATE from the
// child reaches its parent as a DELEGATED signal (though the parent owns
// another session), the parent answers once, and the child reads the
// answer as a DELEGATED signal with answer set.
func TestEscalateReachesTheParentAndTheAnswerComesBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put(t, "boss", `{"name":"Boss","engine":{"type":"http"},"owns":["session:ops"]}`)
	e.put(t, "child", `{"name":"Child","engine":{"type":"http"},"owns":["session:ci"],"parentId":"boss"}`)
	e.put(t, "peer", `{"name":"Peer","engine":{"type":"http"},"owns":["session:web"]}`)
	st := postgres.NewSupervisorRuntime(e.pool)
	deps := supervisorapp.DelegationDeps{Store: st, Supervisors: e.store, Now: func() time.Time { return e.now }}
	delegate, answer := supervisorapp.NewDelegate(deps), supervisorapp.NewAnswerDelegation(deps)
	read := supervisorapp.NewReadSignals(supervisorapp.ReadSignalsDeps{Supervisors: e.store, Events: postgres.NewReader(e.pool), Positions: postgres.NewReader(e.pool),
		Cursors: st, Redactor: plainRedactor{}, Reviews: st, Delegations: st, Poll: 10 * time.Millisecond})
	ctx := t.Context()
	sup := func(id string) supervisor.Supervisor {
		s, err := e.store.Supervisor(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Supervisor
	}

	d, created, err := delegate.Handle(ctx, supervisorapp.DelegateInput{SupervisorID: "child", Kind: supervisor.Escalate, Key: "k1",
		Payload: json.RawMessage(`{"question":"retry?"}`), Channel: "agent"})
	if err != nil || !created || d.To() != "boss" {
		t.Fatalf("delegate = %+v, %v, %v", d.Record(), created, err)
	}
	again, created, err := delegate.Handle(ctx, supervisorapp.DelegateInput{SupervisorID: "child", Kind: supervisor.Escalate, Key: "k1",
		Payload: json.RawMessage(`{"question":"other"}`), Channel: "agent"})
	if err != nil || created || again.ID() != d.ID() {
		t.Fatalf("same key = %s, %v, %v", again.ID(), created, err)
	}
	if _, _, err := delegate.Handle(ctx, supervisorapp.DelegateInput{SupervisorID: "boss", Kind: supervisor.Escalate, Key: "k",
		Payload: json.RawMessage(`1`)}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("escalate from a root = %v", err)
	}

	page, err := read.Handle(ctx, supervisorapp.SignalsInput{Supervisor: sup("boss"), Wait: 5 * time.Second})
	if err != nil || len(page.Signals) != 1 || page.Signals[0].Kind() != supervisor.KindDelegated {
		t.Fatalf("boss read %+v, %v", page, err)
	}
	got := page.Signals[0].Body().(supervisor.DelegatedSignal)
	if got.DelegationID != d.ID() || got.From != "child" || got.Answered || string(got.Request.(json.RawMessage)) != `{"question": "retry?"}` {
		t.Fatalf("DELEGATED = %+v (request %s)", got, got.Request)
	}
	// Nobody else hears it.
	if p, err := read.Handle(ctx, supervisorapp.SignalsInput{Supervisor: sup("peer")}); err != nil || len(p.Signals) != 0 {
		t.Fatalf("peer read %+v, %v", p, err)
	}

	if _, err := answer.Handle(ctx, supervisorapp.AnswerDelegationInput{DelegationID: d.ID(), SupervisorID: "peer",
		Answer: json.RawMessage(`1`)}); !errors.Is(err, supervisor.ErrDelegationNotFound) {
		t.Fatalf("answer by another = %v", err)
	}
	if _, err := answer.Handle(ctx, supervisorapp.AnswerDelegationInput{DelegationID: d.ID(), SupervisorID: "boss",
		Answer: json.RawMessage(`{"retry":true}`), Channel: "agent"}); err != nil {
		t.Fatal(err)
	}
	if _, err := answer.Handle(ctx, supervisorapp.AnswerDelegationInput{DelegationID: d.ID(), SupervisorID: "boss",
		Answer: json.RawMessage(`{"retry":false}`)}); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("second answer = %v", err)
	}

	page, err = read.Handle(ctx, supervisorapp.SignalsInput{Supervisor: sup("child"), Wait: 5 * time.Second})
	if err != nil || len(page.Signals) != 1 || page.Signals[0].Kind() != supervisor.KindDelegated {
		t.Fatalf("child read %+v, %v", page, err)
	}
	back := page.Signals[0].Body().(supervisor.DelegatedSignal)
	if !back.Answered || back.To != "boss" || back.DelegationID != d.ID() || string(back.Answer.(json.RawMessage)) != `{"retry": true}` {
		t.Fatalf("answer signal = %+v (answer %s)", back, back.Answer)
	}
	// The request is settled: the parent no longer reads it.
	if p, err := read.Handle(ctx, supervisorapp.SignalsInput{Supervisor: sup("boss")}); err != nil || len(p.Signals) != 0 {
		t.Fatalf("boss read after answer %+v, %v", p, err)
	}
}

// TestConsultNeedsAnExistingOtherSupervisor: a CONSULT reaches the named
// supervisor as CONSULTED and its answer comes back to the asker.
func TestConsultReachesTheNamedSupervisor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put(t, "a", `{"name":"A","engine":{"type":"http"},"owns":["session:ci"]}`)
	e.put(t, "b", `{"name":"B","engine":{"type":"http"},"owns":["session:web"]}`)
	st := postgres.NewSupervisorRuntime(e.pool)
	deps := supervisorapp.DelegationDeps{Store: st, Supervisors: e.store}
	delegate, answer := supervisorapp.NewDelegate(deps), supervisorapp.NewAnswerDelegation(deps)
	read := supervisorapp.NewReadSignals(supervisorapp.ReadSignalsDeps{Supervisors: e.store, Events: postgres.NewReader(e.pool), Positions: postgres.NewReader(e.pool),
		Cursors: st, Redactor: plainRedactor{}, Reviews: st, Delegations: st})
	ctx := t.Context()
	for _, to := range []string{"", "a", "nobody"} {
		if _, _, err := delegate.Handle(ctx, supervisorapp.DelegateInput{SupervisorID: "a", Kind: supervisor.Consult, Key: "k", To: to,
			Payload: json.RawMessage(`1`)}); !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("CONSULT of %q = %v", to, err)
		}
	}
	d, _, err := delegate.Handle(ctx, supervisorapp.DelegateInput{SupervisorID: "a", Kind: supervisor.Consult, Key: "k", To: "b",
		Payload: json.RawMessage(`"ok?"`)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := e.store.Supervisor(ctx, "b")
	page, err := read.Handle(ctx, supervisorapp.SignalsInput{Supervisor: b.Supervisor, Wait: 5 * time.Second})
	if err != nil || len(page.Signals) != 1 || page.Signals[0].Kind() != supervisor.KindConsulted {
		t.Fatalf("b read %+v, %v", page, err)
	}
	if _, err := answer.Handle(ctx, supervisorapp.AnswerDelegationInput{DelegationID: d.ID(), SupervisorID: "b", Answer: json.RawMessage(`"yes"`)}); err != nil {
		t.Fatal(err)
	}
	a, _ := e.store.Supervisor(ctx, "a")
	page, err = read.Handle(ctx, supervisorapp.SignalsInput{Supervisor: a.Supervisor, Wait: 5 * time.Second})
	if err != nil || len(page.Signals) != 1 {
		t.Fatalf("a read %+v, %v", page, err)
	}
	if c := page.Signals[0].Body().(supervisor.ConsultedSignal); !c.Answered || string(c.Answer.(json.RawMessage)) != `"yes"` {
		t.Fatalf("answer = %+v", c)
	}
}

// TestDelegationsExpire: a delegation nobody answered by its deadline is
// EXPIRED by the sweeper; an answer after it is a conflict, and its target
// no longer reads the request.
func TestDelegationsExpire(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put(t, "boss", `{"name":"Boss","engine":{"type":"http"},"owns":["session:ops"]}`)
	e.put(t, "child", `{"name":"Child","engine":{"type":"http"},"owns":["session:ci"],"parentId":"boss"}`)
	st := postgres.NewSupervisorRuntime(e.pool)
	deps := supervisorapp.DelegationDeps{Store: st, Supervisors: e.store, Now: func() time.Time { return e.now }, TTL: time.Minute}
	ctx := t.Context()
	d, _, err := supervisorapp.NewDelegate(deps).Handle(ctx, supervisorapp.DelegateInput{SupervisorID: "child", Kind: supervisor.Escalate,
		Key: "k", Payload: json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	expire := supervisorapp.NewExpireDelegations(deps)
	// The test clock lies before the database's: the due row is not yet
	// due by the use case's clock, and stays OPEN.
	if n, err := expire.Handle(ctx); err != nil || n != 0 {
		t.Fatalf("early pass = %d, %v", n, err)
	}
	e.now = e.now.Add(time.Minute)
	if n, err := expire.Handle(ctx); err != nil || n != 1 {
		t.Fatalf("pass = %d, %v", n, err)
	}
	if got, _, _ := st.Delegation(ctx, d.ID()); got.Status() != supervisor.DelegationExpired {
		t.Fatalf("status %s", got.Status())
	}
	if _, err := supervisorapp.NewAnswerDelegation(deps).Handle(ctx, supervisorapp.AnswerDelegationInput{DelegationID: d.ID(), SupervisorID: "boss",
		Answer: json.RawMessage(`1`)}); !errors.Is(err, supervisor.ErrDelegationSettled) {
		t.Fatalf("late answer = %v", err)
	}
	boss, _ := e.store.Supervisor(ctx, "boss")
	read := supervisorapp.NewReadSignals(supervisorapp.ReadSignalsDeps{Supervisors: e.store, Events: postgres.NewReader(e.pool), Positions: postgres.NewReader(e.pool),
		Cursors: st, Redactor: plainRedactor{}, Reviews: st, Delegations: st})
	if p, err := read.Handle(ctx, supervisorapp.SignalsInput{Supervisor: boss.Supervisor}); err != nil || len(p.Signals) != 0 {
		t.Fatalf("boss read %+v, %v", p, err)
	}
}
