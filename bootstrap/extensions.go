package bootstrap

import (
	"fmt"
	"os"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/domain/plugin"
)

// Extensions are what a custom server adds to the one the yukta binary
// runs (package server, the public extension API, builds them; see
// docs/extending.md). The zero value is the yukta binary.
type Extensions struct {
	// NodeTypes are registered after the built-ins, through the same path
	// (plugins.NewRunnerSet and the plugin registry); a name already taken
	// stops the server at startup.
	NodeTypes []plugins.NodeType
	// Secrets resolves the ${env.NAME} references of http supervisors'
	// headers, for the names YUKTA_SUPERVISOR_ENV_ALLOWED allows; "" means
	// not set. Nil reads the process environment.
	Secrets func(name string) string
	// Audit hears every journal record before the observer's round commits
	// (journalapp.AuditSink). Nil: no sink.
	Audit journalapp.AuditSink
}

// check refuses, before anything starts, the node types the registry would
// refuse once the server is wired (a malformed descriptor, a name already
// taken by a built-in or another added type), a type without a runner, and
// a trigger, which nothing would ever start (a run's trigger nodes are
// found by the built-in trigger types' names).
// The error names the type, without the wiring's call chain around it.
func (e Extensions) check() error {
	if _, err := pluginapp.NewRegistry(append(plugins.Descriptors(), plugins.DescriptorsOf(e.NodeTypes)...)...); err != nil {
		return err
	}
	for _, t := range e.NodeTypes {
		if t.Descriptor.Category == plugin.Trigger {
			return fmt.Errorf("node type %s is a trigger, and runs start only through the built-in triggers (MANUAL, WEBHOOK, SCHEDULE, SUPERVISOR_SIGNAL); "+
				"make it a processor that follows one of them", t.Descriptor.Type)
		}
		if t.Runner == nil {
			return fmt.Errorf("node type %s has no runner; add it with its behaviour", t.Descriptor.Type)
		}
	}
	return nil
}

// secrets is what ${env.NAME} references read.
func (e Extensions) secrets() func(string) string {
	if e.Secrets == nil {
		return os.Getenv
	}
	return e.Secrets
}

// registeredTypes is every node type this server runs: the built-ins, then
// the extensions' (named so fx cannot confuse it with another slice).
type registeredTypes []plugins.NodeType

func newRegisteredTypes(ev *cel.Evaluator, eg *egress.Client, ext Extensions) (registeredTypes, error) {
	types, err := plugins.Builtins(plugins.RunnerConfig{CEL: ev, Egress: eg})
	if err != nil {
		return nil, err
	}
	return append(types, ext.NodeTypes...), nil
}
