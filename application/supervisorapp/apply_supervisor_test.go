package supervisorapp_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

func TestApplyCreatesThenReplaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	created := e.now
	res := e.put(t, "guard", guard(""))
	if !res.Created || res.Supervisor.ID() != "guard" || res.UpdatedBy != "key:admin" || res.UpdatedVia != "rest" || !res.CreatedAt.Equal(created) {
		t.Fatalf("first apply: got %+v, want created by key:admin over rest at %s", res, created)
	}
	// Every default is explicit in what is stored.
	got, err := e.store.Get(t.Context(), "guard")
	if err != nil {
		t.Fatal(err)
	}
	s := got.Supervisor
	if !slices.Equal(s.AllowedCommands(), supervisor.CommandTypes) || len(s.Reviews()) != 0 || !s.Enabled() || s.EngineType() != "rules" {
		t.Fatalf("stored: allowed %v reviews %v enabled %v engine %s, want the rules defaults", s.AllowedCommands(), s.Reviews(), s.Enabled(), s.EngineType())
	}
	if _, ok, err := s.RuleDocument(nil); !ok || err != nil {
		t.Fatalf("stored rule document: ok %v, err %v", ok, err)
	}

	e.now = e.now.Add(time.Hour)
	res, err = e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "guard", Document: []byte(guard(`,"enabled":false,"allowedCommands":["PauseWorkflow"]`)),
		Actor: "key:ops", Channel: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Created || !res.CreatedAt.Equal(created) || !res.UpdatedAt.Equal(e.now) || res.UpdatedBy != "key:ops" || res.UpdatedVia != "mcp" || res.Supervisor.Enabled() {
		t.Fatalf("second apply: got %+v, want replaced (created %s, updated %s by key:ops over mcp), disabled", res, created, e.now)
	}
	got, err = e.store.Get(t.Context(), "guard")
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(created) || !got.UpdatedAt.Equal(e.now) || got.UpdatedBy != "key:ops" || got.Supervisor.Enabled() ||
		!slices.Equal(got.Supervisor.AllowedCommands(), []supervisor.CommandType{supervisor.PauseWorkflow}) {
		t.Fatalf("stored after replace: %+v", got)
	}

	evs := e.events(t)
	if len(evs) != 2 {
		t.Fatalf("events: got %d, want 2 SupervisorApplied", len(evs))
	}
	for i, want := range []struct{ actor, channel, created string }{{"key:admin", "rest", `"created": true`}, {"key:ops", "mcp", `"created": false`}} {
		ev := evs[i]
		if ev.typ != supervisorapp.EventSupervisorApplied || ev.session != "" || ev.actor != want.actor || ev.channel != want.channel ||
			!strings.Contains(ev.data, `"supervisorId": "guard"`) || !strings.Contains(ev.data, want.created) || !strings.Contains(ev.data, `"engine": "rules"`) {
			t.Errorf("event %d: got %+v, want SupervisorApplied by %s over %s with %s", i, ev, want.actor, want.channel, want.created)
		}
	}
}

// TestApplyListsEveryProblem: an invalid document is refused with every
// problem, each with its path, and nothing is stored.
func TestApplyListsEveryProblem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	doc := `{"id":"other","name":"","engine":{"type":"rules","settings":{"rules":[
		{"id":"r1","when":{"event":"NodeStatusChanged","status":"EXPLODED","count":0,"withinSeconds":60,"if":"event.nodeId =="},
		 "then":{"command":"PauseWorkflw"}}]}},"owns":["session:ci","session:ci"],"tickSeconds":1,"colour":"red"}`
	_, err := e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "guard", Document: []byte(doc), Actor: "key:admin", Channel: "rest"})
	if !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("apply: got %v, want invalid", err)
	}
	got := violations(t, err)
	for _, w := range []struct{ path, words string }{
		{"id", `the URL names supervisor "guard"`},
		{"name", "must not be empty"},
		{"colour", ""},
		{"owns[1]", "repeats session:ci"},
		{"tickSeconds", "must be from 5"},
		{"engine.settings.rules[0].when.status", "EXPLODED"},
		{"engine.settings.rules[0].when.count", ""},
		{"engine.settings.rules[0].when.if", `CEL expression "event.nodeId =="`},
		{"engine.settings.rules[0].then.command", "PauseWorkflw"},
	} {
		if !hasViolation(got, w.path, w.words) {
			t.Errorf("no violation at %s containing %q in\n%s", w.path, w.words, strings.Join(got, "\n"))
		}
	}
	if n := e.rows(t, "supervisors"); n != 0 {
		t.Errorf("supervisors: got %d rows, want none", n)
	}
	if n := e.rows(t, "events"); n != 0 {
		t.Errorf("events: got %d rows, want none", n)
	}
}

// TestApplyKeepsMaskedSecrets: a secret setting sent back as *** keeps the
// stored secret; reads mask it; *** with nothing stored is refused.
func TestApplyKeepsMaskedSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.put(t, "agent", agentDoc("Bearer s3cret-token", ""))
	if v := res.Supervisor.Settings()["secretHeaders"].(map[string]any)["Authorization"]; v != "***" {
		t.Fatalf("apply result shows the secret: %v", v)
	}
	read, err := e.get.Handle(t.Context(), supervisorapp.GetInput{ID: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := read.Supervisor.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), "s3cret") || !strings.Contains(string(doc), `"Authorization":"***"`) || !strings.Contains(string(doc), `"X-Team":"ops"`) {
		t.Fatalf("read back: %s, want the secret header masked and the plain one shown", doc)
	}
	// Send back what was read, with one change: the secret stays.
	changed := strings.Replace(string(doc), `"name":"Agent"`, `"name":"Agent two"`, 1)
	e.put(t, "agent", changed)
	raw, err := e.store.Get(t.Context(), "agent")
	if err != nil {
		t.Fatal(err)
	}
	if v := raw.Supervisor.Settings()["secretHeaders"].(map[string]any)["Authorization"]; v != "Bearer s3cret-token" || raw.Supervisor.Name() != "Agent two" {
		t.Fatalf("stored after sending *** back: %v, name %q; want the secret kept", v, raw.Supervisor.Name())
	}
	// *** where nothing is stored is refused, with the parent problem in the same answer.
	_, err = e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "fresh", Document: []byte(agentDoc("***", `,"parentId":"ops"`))})
	got := violations(t, err)
	if len(got) != 2 || !hasViolation(got, "engine.settings.secretHeaders.Authorization", "no stored value to keep") ||
		!hasViolation(got, "parentId", `supervisor "ops" does not exist`) {
		t.Fatalf("violations: %q, want the masked secret and the missing parent", got)
	}
}

// TestApplyChecksTheParentChain: a missing parent and a cycle are refused;
// a chain of stored supervisors is accepted.
func TestApplyChecksTheParentChain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "team", Document: []byte(guard(`,"parentId":"ops"`))})
	if got := violations(t, err); len(got) != 1 || !hasViolation(got, "parentId", `supervisor "ops" does not exist; create it first`) {
		t.Fatalf("missing parent: %q", got)
	}
	e.put(t, "ops", agentDoc("Bearer t", ""))
	e.put(t, "team", guard(`,"parentId":"ops"`))
	e.put(t, "leaf", guard(`,"parentId":"team"`))
	// ops under leaf closes a cycle.
	_, err = e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "ops", Document: []byte(agentDoc("***", `,"parentId":"leaf"`))})
	if got := violations(t, err); len(got) != 1 || !hasViolation(got, "parentId", "the chain ops -> leaf -> team -> ops is a cycle") {
		t.Fatalf("cycle: %q", got)
	}
	got, err := e.store.Get(t.Context(), "ops")
	if err != nil || got.Supervisor.ParentID() != "" {
		t.Fatalf("ops after the refused cycle: parent %q, %v; want still a root", got.Supervisor.ParentID(), err)
	}
}

// TestConcurrentAppliesCannotCloseACycle: a -> b and b -> a applied at the
// same time; supervisor changes are serialized, so one of them is refused.
func TestConcurrentAppliesCannotCloseACycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for round := range 5 {
		a, b := fmt.Sprintf("a%d", round), fmt.Sprintf("b%d", round)
		e.put(t, a, guard(""))
		e.put(t, b, guard(""))
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, pair := range [][2]string{{a, b}, {b, a}} {
			wg.Go(func() {
				_, errs[i] = e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: pair[0], Document: []byte(guard(`,"parentId":"` + pair[1] + `"`))})
			})
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: both or neither applied: %v, %v; want exactly one refused as a cycle", round, errs[0], errs[1])
		}
		for _, err := range errs {
			if err != nil && !strings.Contains(err.Error(), "is a cycle") {
				t.Fatalf("round %d: refusal %v, want a cycle", round, err)
			}
		}
	}
}
