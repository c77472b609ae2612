package supervisorapp_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/supervisorapp"
)

// agentReads is ReadAgentSignals over a credEnv's database, wired as
// bootstrap wires it.
func agentReads(e *credEnv) *supervisorapp.ReadAgentSignals {
	st := postgres.NewSupervisorRuntime(e.pool)
	read := supervisorapp.NewReadSignals(supervisorapp.ReadSignalsDeps{Supervisors: e.store, Events: postgres.NewReader(e.pool), Positions: postgres.NewReader(e.pool),
		Cursors: st, Redactor: plainRedactor{}, Reviews: st, Delegations: st, Poll: 10 * time.Millisecond})
	return supervisorapp.NewReadAgentSignals(e.auth, read)
}

// sessionEvent appends an event of session s to the outbox.
func (e *credEnv) sessionEvent(t *testing.T, s string) {
	t.Helper()
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO events (at, type, session_id, workflow_id, actor) VALUES (now(), 'Probe', $1, 'w', 'test')`, s); err != nil {
		t.Fatal(err)
	}
}

// TestRecheckSeesEveryChange: Recheck refuses a token once its credential
// is rotated or revoked or its supervisor disabled or deleted, with the
// same refusal as Handle, and shows an owns change by UpdatedAt.
func TestRecheckSeesEveryChange(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	const doc = `{"name":"A","engine":{"type":"http"},"owns":["session:ci","session:cd"]}`
	for _, c := range []struct {
		name   string
		change func(token string)
		reason supervisorapp.AgentRefusalReason
	}{
		{"rotate", func(string) { e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "a"}) }, supervisorapp.RefusedUnknown},
		{"revoke", func(string) {
			if _, err := e.revoke.Handle(t.Context(), supervisorapp.RevokeCredentialInput{SupervisorID: "a", Actor: "key:admin", Channel: "rest"}); err != nil {
				t.Fatal(err)
			}
		}, supervisorapp.RefusedUnknown},
		{"disable", func(string) {
			e.put(t, "a", `{"name":"A","engine":{"type":"http"},"owns":["session:ci","session:cd"],"enabled":false}`)
		}, supervisorapp.RefusedDisabled},
		{"expire", func(string) { e.now = e.now.Add(31 * 24 * time.Hour) }, supervisorapp.RefusedExpired},
	} {
		e.now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		e.put(t, "a", doc)
		tok := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "a"}).Token.Reveal()
		before, err := e.auth.Recheck(t.Context(), tok)
		if err != nil || before.Supervisor.ID() != "a" {
			t.Fatalf("%s: recheck before the change: %v %v", c.name, before, err)
		}
		c.change(tok)
		_, err = e.auth.Recheck(t.Context(), tok)
		refused(t, err, c.reason, tok)
	}
	e.now = e.now.Add(time.Minute)
	e.put(t, "a", doc)
	tok := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "a"}).Token.Reveal()
	before, _ := e.auth.Recheck(t.Context(), tok)
	e.now = e.now.Add(time.Minute)
	e.put(t, "a", `{"name":"A","engine":{"type":"http"},"owns":["session:ci"]}`)
	after, err := e.auth.Recheck(t.Context(), tok)
	if err != nil || after.UpdatedAt.Equal(before.UpdatedAt) || len(after.Supervisor.Owns()) != 1 {
		t.Fatalf("recheck after narrowing: %v %v (before %v)", after.Supervisor.Owns(), err, before.UpdatedAt)
	}
	if _, err := e.delete.Handle(t.Context(), supervisorapp.DeleteInput{ID: "a", Actor: "key:admin", Channel: "rest"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.auth.Recheck(t.Context(), tok); !errors.Is(err, supervisorapp.ErrAgentUnauthenticated) {
		t.Fatalf("recheck after delete: %v, want a refusal", err)
	}
}

// TestAWaitingReadEndsWithItsCredential: a read waiting for signals ends
// with the refusal within AgentRecheckInterval (and a margin for the
// reads) of the revocation, and one waiting across a narrowing never
// answers a signal of the unit that was dropped.
func TestAWaitingReadEndsWithItsCredential(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	e.put(t, "a", `{"name":"A","engine":{"type":"http"},"owns":["session:ci","session:cd"]}`)
	tok := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "a"}).Token.Reveal()
	reads := agentReads(e)
	head, err := reads.Handle(t.Context(), supervisorapp.AgentSignalsInput{Token: tok})
	if err != nil {
		t.Fatal(err)
	}

	// Narrowed while it waits: cd's event is skipped, ci's answered.
	type result struct {
		page supervisorapp.SignalPage
		err  error
		at   time.Time
	}
	done := make(chan result, 1)
	go func() {
		p, err := reads.Handle(t.Context(), supervisorapp.AgentSignalsInput{Token: tok, After: head.Cursor, Wait: 30 * time.Second})
		done <- result{p, err, time.Now()}
	}()
	e.now = e.now.Add(time.Minute)
	e.put(t, "a", `{"name":"A","engine":{"type":"http"},"owns":["session:ci"]}`)
	e.sessionEvent(t, "cd")
	e.sessionEvent(t, "ci")
	r := <-done
	if r.err != nil || len(r.page.Signals) != 1 {
		t.Fatalf("the read across the narrowing: %v %v, want the one signal of ci", r.page.Signals, r.err)
	}
	if b, _ := r.page.Signals[0].MarshalJSON(); !strings.Contains(string(b), `"sessionId":"ci"`) {
		t.Fatalf("the read across the narrowing answered %s, want ci's event", b)
	}

	// Revoked while it waits: the refusal, soon.
	go func() {
		p, err := reads.Handle(t.Context(), supervisorapp.AgentSignalsInput{Token: tok, After: r.page.Cursor, Wait: 30 * time.Second})
		done <- result{p, err, time.Now()}
	}()
	time.Sleep(50 * time.Millisecond) // let it wait
	if _, err := e.revoke.Handle(t.Context(), supervisorapp.RevokeCredentialInput{SupervisorID: "a", Actor: "key:admin", Channel: "rest"}); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	e.sessionEvent(t, "ci")
	select {
	case r := <-done:
		if !errors.Is(r.err, supervisorapp.ErrAgentUnauthenticated) || len(r.page.Signals) != 0 {
			t.Fatalf("the read across the revocation: %v %v, want the refusal and no signal", r.page.Signals, r.err)
		}
		t.Logf("the waiting read ended %d ms after the revocation", r.at.Sub(revoked).Milliseconds())
	case <-time.After(10 * supervisorapp.AgentRecheckInterval):
		t.Fatalf("the waiting read still waits %s after the revocation", 10*supervisorapp.AgentRecheckInterval)
	}
}
