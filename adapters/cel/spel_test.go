package cel_test

import (
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestSpELGetsItsCELForm: a SpEL-style condition (the engines reference's
// syntax) fails to compile in every CEL field with an error that says CEL
// is expected and shows the CEL form, which compiles; a CEL error that is
// not SpEL gets no such text.
func TestSpELGetsItsCELForm(t *testing.T) {
	t.Parallel()
	c := conditions(t)
	ev, err := cel.New()
	if err != nil {
		t.Fatal(err)
	}
	fields := []struct {
		field string
		ctx   supervisor.ExprContext // "" for a node expression or breakpoint condition (payload, execution)
		spel  string
		cel   string
	}{
		{"workflow engine when", supervisor.EngineWhen, `#event.type == 'InputRequested'`, `event.type == 'InputRequested'`},
		{"rule when.if", supervisor.EventRule, `#event.nodeId matches 'build-.*' and #execution.status == "RUNNING"`,
			`event.nodeId.matches('build-.*') && execution.status == "RUNNING"`},
		{"tick rule when.if", supervisor.TickRule, `#root.now > #execution.lastProgressAt or not (#execution.status == 'PAUSED')`,
			`now > execution.lastProgressAt || !(execution.status == 'PAUSED')`},
		{"deny if", supervisor.ReviewRule, `#command.type == 'StopWorkflow' and #actor != 'key:admin'`, `command.type == 'StopWorkflow' && actor != 'key:admin'`},
		{"requireApproval if", supervisor.ReviewRule, `#root.actor == 'key:ops'`, `actor == 'key:ops'`},
		{"breakpoint condition", "", `#payload.size > 3 and #payload.name matches "^a"`, `payload.size > 3 && payload.name.matches("^a")`},
	}
	for _, f := range fields {
		check := func(expr string) error {
			if f.ctx == "" {
				return ev.CompileBool(expr)
			}
			return c.Check(expr, supervisor.VariableNames(f.ctx))
		}
		err := check(f.spel)
		if err == nil || !strings.Contains(err.Error(), "SpEL") || !strings.Contains(err.Error(), "CEL") ||
			!strings.Contains(err.Error(), "write it as: "+f.cel) {
			t.Errorf("%s: %q: %v; want the CEL form %s", f.field, f.spel, err, f.cel)
		}
		if err := check(f.cel); err != nil {
			t.Errorf("%s: the CEL form %q does not compile: %v", f.field, f.cel, err)
		}
	}
	// A type reference has no CEL form: the error says so.
	if err := ev.CompileBool(`T(java.lang.Math).max(payload.a, 1) > 2`); err == nil || !strings.Contains(err.Error(), "no T(...) type references") {
		t.Errorf("T(...): %v", err)
	}
	// Text inside strings is not SpEL, and a plain CEL mistake is not.
	for _, expr := range []string{`payload.tag == '#event and more' ==`, `payload.a ==`, `payload.a matches`} {
		if err := ev.CompileBool(expr); err == nil || strings.Contains(err.Error(), "SpEL") {
			t.Errorf("%q: %v; want a CEL error without the SpEL hint", expr, err)
		}
	}
}
