package mcpserver

import "slices"

// Guide returns the plugin creation guide. Its templates are whole Go files
// that compile against this module as they are (a test builds them), so the
// contract they teach is the one the engine runs.
func Guide() PluginGuide {
	return PluginGuide{
		Architecture: "A node type has two halves. Its description (domain/plugin.Descriptor: type name, category, typed config fields, " +
			"config-dependent output ports, extra checks) lives where session validation and get_plugin_details read it; its behaviour " +
			"(an application/executionapp.Runner) lives in adapters/plugins and runs one message at a time. The engine claims a message for a node " +
			"from the durable work queue, calls Runner.Run outside any transaction, and commits what it returns (emitted messages, log lines, a " +
			"result, a timer or an input request) in one transaction. Node types are compiled into the server; there is no runtime plugin loading.",
		Contract: "type Runner interface { Run(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) }. " +
			"Invocation carries SessionID, WorkflowID, ExecutionID, NodeID, NodeType, ItemID, IdempotencyKey (stable across retries of this message), " +
			"Attempt (from 1), Config (with the type's defaults applied), Payload (a JSON value), Execution (facts for expressions), Now, and Resume " +
			"(set when a parked message comes back). Outcome has Emits ([]Emit{Port, Payload}: one message per edge whose sourcePort matches), " +
			"Logs ([]LogLine{Level, Message}), Defer (park until a time, durably), Park (*InputRequest: wait for an answer), Result/HasResult. " +
			"Returning an error fails the attempt: the node's retry policy (config retry.maxAttempts, retry.backoff) decides what follows. " +
			"Run must honour ctx (cancelled on KILL, immediate node stop, fail-fast and the node's timeout) and may run more than once for the same " +
			"message, so side effects must be idempotent (send IdempotencyKey to other systems). A Descriptor's Category is trigger (starts runs, no " +
			"inbound edge), processor, or terminal (no outbound edge, no ports); PortsFunc returns the ports for a validated config (nil: \"default\").",
		Templates: slices.Clone(templates),
		Checklist: []string{
			"Type is UPPER_SNAKE_CASE, unique, at most 64 characters; Description is one sentence; Usage shows a pattern and an example config.",
			"Every config field is declared with its type; Required, Default and Options are set where they apply; secrets have Secret: true (masked on every read).",
			"Processors and terminals are wrapped in withRunFields (adapters/plugins) so they accept timeout and retry like every other type.",
			"PortsFunc returns every port a config can emit on; Run never emits on a port PortsFunc does not list.",
			"Run checks ctx, is safe to run twice for one message, and never blocks past ctx; long waits use Outcome.Defer, not sleep.",
			"Log lines never contain secrets or whole payloads with credentials.",
			"The descriptor is added to Descriptors() and the runner to the map in NewRunners (adapters/plugins); NewRunners fails at startup if one is missing.",
		},
		Testing: "Unit-test the runner with a table of Invocations (see adapters/plugins/runners_test.go): payloads, configs, a cancelled ctx, a second attempt. " +
			"Test the descriptor with pluginapp.NewRegistry (it runs Descriptor.Check) and with Descriptor.Validate on good and bad configs. " +
			"Then apply a session that uses the type (create_session) and run it end to end (start_workflow, get_workflow_status, get_execution_logs).",
		Registration: "Add the descriptor function to Descriptors() in adapters/plugins/plugins.go and the runner to the map in NewRunners " +
			"(adapters/plugins/runners.go), rebuild and restart the server. list_plugins then shows the type.",
	}
}

// templates are compiled by TestGuideTemplatesCompile.
var templates = []Template{
	{Kind: "processor", File: "adapters/plugins/uppercase.go", Code: `package plugins

import (
	"context"
	"strings"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// uppercaseDescriptor describes UPPERCASE: it upper-cases one string field of
// the payload and emits the changed payload on "default".
func uppercaseDescriptor() plugin.Descriptor {
	return plugin.Descriptor{
		Type:        "UPPERCASE",
		Category:    plugin.Processor,
		Description: "Upper-cases one string field of the payload.",
		Usage: "Pattern: MANUAL -> UPPERCASE -> RESULT\n" +
			"Example config: {\"field\": \"name\"}",
		Fields: []plugin.Field{
			{Name: "field", Type: plugin.String, Required: true, Description: "payload field to upper-case"},
		},
	}
}

// uppercaseRunner is the behaviour of UPPERCASE.
type uppercaseRunner struct{}

var _ executionapp.Runner = uppercaseRunner{}

// Run implements executionapp.Runner.
func (uppercaseRunner) Run(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return executionapp.Outcome{}, err
	}
	field, _ := in.Config["field"].(string)
	out := map[string]any{}
	if m, ok := in.Payload.(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	}
	if s, ok := out[field].(string); ok {
		out[field] = strings.ToUpper(s)
	}
	return executionapp.Outcome{
		Emits: []executionapp.Emit{{Port: plugin.DefaultPort, Payload: out}},
		Logs:  []executionapp.LogLine{executionapp.Info("upper-cased " + field)},
	}, nil
}
`},
	{Kind: "terminal", File: "adapters/plugins/collect.go", Code: `package plugins

import (
	"context"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// collectDescriptor describes COLLECT: a terminal that stores the payload it
// receives as the execution's result. Terminals have no ports.
func collectDescriptor() plugin.Descriptor {
	return plugin.Descriptor{
		Type:        "COLLECT",
		Category:    plugin.Terminal,
		Description: "Stores the message it receives as the execution's result.",
		Usage:       "Pattern: MANUAL -> TRANSFORM -> COLLECT",
		PortsFunc:   func(map[string]any) []string { return nil },
	}
}

// collectRunner is the behaviour of COLLECT.
type collectRunner struct{}

var _ executionapp.Runner = collectRunner{}

// Run implements executionapp.Runner.
func (collectRunner) Run(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return executionapp.Outcome{}, err
	}
	return executionapp.Outcome{Result: in.Payload, HasResult: true}, nil
}
`},
	{Kind: "trigger", File: "adapters/plugins/ticket.go", Code: `package plugins

import (
	"context"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// ticketDescriptor describes TICKET: a trigger node. Runs start through
// start_workflow (every trigger node gets the payload when a workflow has no
// MANUAL node), the webhook route or the scheduler; the trigger's runner
// receives that payload and emits it, here with a default priority added.
// A trigger has no inbound edge.
func ticketDescriptor() plugin.Descriptor {
	return plugin.Descriptor{
		Type:        "TICKET",
		Category:    plugin.Trigger,
		Description: "Starts a run from a ticket payload, adding a default priority.",
		Usage:       "Pattern: TICKET -> ROUTER -> ...\nExample config: {\"priority\": \"normal\"}",
		Fields: []plugin.Field{
			{Name: "priority", Type: plugin.String, Options: []string{"low", "normal", "high"}, Default: "normal", Description: "priority when the payload has none"},
		},
	}
}

// ticketRunner is the behaviour of TICKET.
type ticketRunner struct{}

var _ executionapp.Runner = ticketRunner{}

// Run implements executionapp.Runner.
func (ticketRunner) Run(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return executionapp.Outcome{}, err
	}
	out := map[string]any{"priority": in.Config["priority"]}
	if m, ok := in.Payload.(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	}
	return executionapp.Outcome{Emits: []executionapp.Emit{{Port: plugin.DefaultPort, Payload: out}}}, nil
}
`},
}
