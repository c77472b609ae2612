package supervisorapp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/application/sessionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestApplyChecksTheWorkflowSupervisorsWorkflow: a workflow supervisor
// whose session or workflow does not exist, or whose maxConcurrent is more
// than the reserved slot pool, is refused at the setting's path with the
// next step, and nothing is stored; one that fits is stored with every
// default explicit (maxConcurrent, timeout).
func TestApplyChecksTheWorkflowSupervisorsWorkflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reg, err := pluginapp.NewRegistry(plugins.Descriptors()...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sessionapp.NewApplySession(postgres.NewTransactor(e.pool), reg, time.Now).Handle(t.Context(), sessionapp.ApplyInput{ID: "supervisors",
		Document: []byte(`{"name":"supervisors","workflows":[{"workflowId":"triage","nodes":[{"nodeId":"s","type":"SUPERVISOR_SIGNAL"},
			{"nodeId":"d","type":"SUPERVISOR_DECISION"}],"edges":[{"source":"s","target":"d"}]}]}`)}); err != nil {
		t.Fatal(err)
	}
	e.apply.UseEngineChecks(supervisorapp.EngineChecks{Workflows: postgres.NewSessionStore(e.pool), ReservedSlots: 3})
	doc := func(session, workflow, more string) string {
		return `{"name":"T","owns":["session:ci"],"engine":{"type":"workflow","settings":{"sessionId":"` + session + `","workflowId":"` + workflow +
			`","events":["InputRequested"]` + more + `}}}`
	}
	for _, tt := range []struct{ name, doc, path, want string }{
		{"no session", doc("nope", "triage", ""), "engine.settings.sessionId", `session "nope" does not exist; create it with the workflow "triage" first (PUT /api/sessions/nope`},
		{"no workflow", doc("supervisors", "nope", ""), "engine.settings.workflowId", `workflow "nope" does not exist in session "supervisors"; GET /api/sessions/supervisors lists its workflows`},
		{"more than the pool", doc("supervisors", "triage", `,"maxConcurrent":4`), "engine.settings.maxConcurrent",
			"is 4, more than the 3 reserved slots (--reserved-supervisor-slots (YUKTA_RESERVED_SUPERVISOR_SLOTS))"},
	} {
		_, err := e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "triager", Document: []byte(tt.doc), Actor: "key:admin", Channel: "rest"})
		if !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("%s: %v, want a 400", tt.name, err)
		}
		if lines := violations(t, err); !hasViolation(lines, tt.path, tt.want) || len(lines) != 1 {
			t.Errorf("%s: %q; want one violation at %s saying %q", tt.name, lines, tt.path, tt.want)
		}
	}
	if n := e.rows(t, "supervisors"); n != 0 {
		t.Fatalf("%d supervisors stored after refusals", n)
	}
	res := e.put(t, "triager", doc("supervisors", "triage", `,"maxConcurrent":3`))
	got, err := res.Supervisor.WorkflowSettings()
	if err != nil || got.MaxConcurrent != 3 || got.Timeout != supervisor.WorkflowDefaultTimeoutSeconds*time.Second {
		t.Fatalf("stored: %+v, %v", got, err)
	}
	if v := res.Supervisor.Settings()["timeout"]; v == nil {
		t.Errorf("the stored settings %v do not show the default timeout", res.Supervisor.Settings())
	}
	// With no reserved pool (0: runs share --max-running) maxConcurrent
	// has no bound here.
	e.apply.UseEngineChecks(supervisorapp.EngineChecks{Workflows: postgres.NewSessionStore(e.pool)})
	e.put(t, "wide", doc("supervisors", "triage", `,"maxConcurrent":50`))
}
