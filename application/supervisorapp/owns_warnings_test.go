package supervisorapp_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
)

// TestOwningAMissingSessionWarns: owning a session or workflow that does
// not exist is stored, with a warning in the apply's answer and on every
// read, until it exists.
func TestOwningAMissingSessionWarns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sessions := postgres.NewSessionStore(e.pool)
	e.apply.UseEngineChecks(supervisorapp.EngineChecks{Sessions: sessions})
	get := supervisorapp.NewGetSupervisor(postgres.NewSupervisorStore(e.pool))
	get.UseSessions(sessions)
	doc := `{"name":"G","owns":["session:ci","workflow:ops/nap"],"engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[{"id":"r","when":{"event":"NodeStatusChanged","status":"FAILURE"},"then":{"command":"PauseWorkflow"}}]}}}`
	res := e.put(t, "g", doc)
	want := []string{`owns "session:ci", but session "ci" does not exist`, `owns "workflow:ops/nap", but session "ops" does not exist`}
	check := func(what string, got []string, want []string) {
		t.Helper()
		if len(got) != len(want) || slices.ContainsFunc(want, func(w string) bool {
			return !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) })
		}) {
			t.Fatalf("%s warnings: %q, want %q", what, got, want)
		}
	}
	check("apply", res.Warnings, want)
	s, err := get.Handle(t.Context(), supervisorapp.GetInput{ID: "g"})
	if err != nil {
		t.Fatal(err)
	}
	check("get", s.Warnings, want)

	reg, err := pluginapp.NewRegistry(plugins.Descriptors()...)
	if err != nil {
		t.Fatal(err)
	}
	apply := sessionapp.NewApplySession(postgres.NewTransactor(e.pool), reg, time.Now)
	for _, id := range []string{"ci", "ops"} {
		if _, err := apply.Handle(t.Context(), sessionapp.ApplyInput{ID: id,
			Document: []byte(`{"name":"s","workflows":[{"workflowId":"other","nodes":[{"nodeId":"t","type":"MANUAL"}]}]}`)}); err != nil {
			t.Fatal(err)
		}
	}
	s, err = get.Handle(t.Context(), supervisorapp.GetInput{ID: "g"})
	if err != nil {
		t.Fatal(err)
	}
	check("get once the sessions exist", s.Warnings, []string{`owns "workflow:ops/nap", but session "ops" has no workflow "nap"`})
}
