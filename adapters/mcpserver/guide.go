package mcpserver

import "slices"

// Guide returns the plugin creation guide. Its templates are whole Go files
// of one custom server (package main over the public extension API,
// package server) that compile against this module as they are (a test
// builds them), so the contract they teach is the one the engine runs.
func Guide() PluginGuide {
	return PluginGuide{
		Architecture: "Your own code runs in Yukta in two ways, neither of which needs a fork of the repository. " +
			"(1) Remote workers, in any language: a workflow node of type TASK (config queue, timeout, retry, heartbeatTimeout, optional " +
			"inputSchema and outputSchema) puts each message on a durable task queue; worker processes you run anywhere poll it over HTTP under " +
			"/api/worker/v1 (POST /poll, then /tasks/{taskId}/heartbeat, /complete or /fail, and /logs) with an API key of role WORKER, under a lease: " +
			"a lease that runs out redelivers the task with attempt + 1, and an answer with a stale lease token is refused (409). See docs/workers.md. " +
			"(2) A custom server, in Go: your own main package imports github.com/yukta/yukta/server and calls server.Main with options. The program " +
			"is the whole yukta binary (serve and every client command) with your node types (server.WithNodeType) and adapters " +
			"(server.WithAuditSink, server.WithSecretProvider) added. See docs/extending.md and examples/custom-server. " +
			"A node type has two halves, and the built-ins are made the same way: its description (server.Descriptor: type name, category, typed " +
			"config fields, config-dependent output ports, extra checks), which session validation, list_plugins and get_plugin_details read, and its " +
			"behaviour (a server.Runner), which runs one message at a time. The engine claims a message for a node from the durable work queue, calls " +
			"Runner.Run outside any transaction, and commits what it returns (emitted messages, log lines, a result, a timer or an input request) in " +
			"one transaction. The templates below are one custom server's files; pick TASK and a worker instead when the code is not Go, needs other " +
			"machines, or scales apart from the server.",
		Contract: "type Runner interface { Run(ctx context.Context, in server.Invocation) (server.Outcome, error) } (server.RunnerFunc adapts a function). " +
			"Invocation carries SessionID, WorkflowID, ExecutionID, NodeID, NodeType, ItemID, IdempotencyKey (stable across retries of this message), " +
			"Attempt (from 1), Config (with the type's defaults applied), Payload (a JSON value), Execution (facts for expressions), Now, and Resume " +
			"(set when a parked message comes back). Outcome has Emits ([]Emit{Port, Payload}: one message per edge whose sourcePort matches), " +
			"Logs ([]LogLine{Level, Message}), Defer (park until a time, durably), Park (*InputRequest: wait for an answer), Result/HasResult. " +
			"Returning an error fails the attempt: the node's retry policy (config retry.maxAttempts, retry.backoff) decides what follows. " +
			"Run must honour ctx (cancelled on KILL, immediate node stop, fail-fast and the node's timeout) and may run more than once for the same " +
			"message, so side effects must be idempotent (send IdempotencyKey to other systems). One runner serves every node of its type, " +
			"concurrently. A Descriptor's Category is server.Processor or server.Terminal (no outbound edge, no ports); a type of your own cannot be a " +
			"trigger, since runs start only through the built-in triggers (MANUAL, WEBHOOK, SCHEDULE, SUPERVISOR_SIGNAL). PortsFunc returns the ports for a validated config (nil: \"default\"). Only package server is public API; " +
			"docs/extending.md says how it is versioned.",
		Templates: slices.Clone(templates),
		Checklist: []string{
			"Type is UPPER_SNAKE_CASE, unique among the built-ins and your other types (a taken name stops the server at startup), at most 64 characters; Description is one sentence; Usage shows a pattern and an example config.",
			"Every config field is declared with its type; Required, Default and Options are set where they apply; secrets have Secret: true (masked on every read and in logs).",
			"Processors and terminals get timeout and retry added by WithNodeType, like every built-in; declare your own timeout only to change its wording or default.",
			"PortsFunc returns every port a config can emit on; Run never emits on a port PortsFunc does not list.",
			"Run checks ctx, is safe to run twice for one message and concurrently, and never blocks past ctx; long waits use Outcome.Defer, not sleep.",
			"Log lines and error texts never contain secrets or whole payloads with credentials.",
			"Import only package github.com/yukta/yukta/server; the other packages of the module are internal and change without notice.",
		},
		Testing: "Unit-test the runner with a table of server.Invocations: payloads, configs, a cancelled ctx, a second attempt. " +
			"Test the descriptor with Descriptor.Check and Descriptor.Validate on good and bad configs. " +
			"Then build your server, start it (./your-server serve), apply a session that uses the type (create_session) and run it end to end " +
			"(start_workflow, get_workflow_status, get_execution_logs); e2e/custom_server_test.go does this for examples/custom-server.",
		Registration: "Pass each type to server.Main in your own main package: server.Main(server.WithNodeType(uppercaseDescriptor(), uppercaseRunner{}), ...) " +
			"(the main.go template), with a go.mod that requires github.com/yukta/yukta. Build it with go build and run it instead of yukta; " +
			"list_plugins then shows the types beside the built-ins. For a worker instead, add a TASK node with a queue and run a process that " +
			"polls /api/worker/v1/poll with a WORKER key (docs/workers.md).",
	}
}

// templates are compiled by TestGuideTemplatesCompile.
var templates = []Template{
	{Kind: "server", File: "main.go", Code: `// Command my-server is yukta with UPPERCASE and COLLECT added.
// Its go.mod requires github.com/yukta/yukta; build it with go build and run
// it as yukta is run (./my-server serve).
package main

import "github.com/yukta/yukta/server"

func main() {
	server.Main(
		server.WithNodeType(uppercaseDescriptor(), uppercaseRunner{}),
		server.WithNodeType(collectDescriptor(), collectRunner{}),
	)
}
`},
	{Kind: "processor", File: "uppercase.go", Code: `package main

import (
	"context"
	"strings"

	"github.com/yukta/yukta/server"
)

// uppercaseDescriptor describes UPPERCASE: it upper-cases one string field of
// the payload and emits the changed payload on "default".
func uppercaseDescriptor() server.Descriptor {
	return server.Descriptor{
		Type:        "UPPERCASE",
		Category:    server.Processor,
		Description: "Upper-cases one string field of the payload.",
		Usage: "Pattern: MANUAL -> UPPERCASE -> RESULT\n" +
			"Example config: {\"field\": \"name\"}",
		Fields: []server.Field{
			{Name: "field", Type: server.String, Required: true, Description: "payload field to upper-case"},
		},
	}
}

// uppercaseRunner is the behaviour of UPPERCASE.
type uppercaseRunner struct{}

var _ server.Runner = uppercaseRunner{}

// Run implements server.Runner.
func (uppercaseRunner) Run(ctx context.Context, in server.Invocation) (server.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return server.Outcome{}, err
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
	return server.Outcome{
		Emits: []server.Emit{{Port: server.DefaultPort, Payload: out}},
		Logs:  []server.LogLine{{Level: "info", Message: "upper-cased " + field}},
	}, nil
}
`},
	{Kind: "terminal", File: "collect.go", Code: `package main

import (
	"context"

	"github.com/yukta/yukta/server"
)

// collectDescriptor describes COLLECT: a terminal that stores the payload it
// receives as the execution's result. Terminals have no ports.
func collectDescriptor() server.Descriptor {
	return server.Descriptor{
		Type:        "COLLECT",
		Category:    server.Terminal,
		Description: "Stores the message it receives as the execution's result.",
		Usage:       "Pattern: MANUAL -> TRANSFORM -> COLLECT",
		PortsFunc:   func(map[string]any) []string { return nil },
	}
}

// collectRunner is the behaviour of COLLECT.
type collectRunner struct{}

var _ server.Runner = collectRunner{}

// Run implements server.Runner.
func (collectRunner) Run(ctx context.Context, in server.Invocation) (server.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return server.Outcome{}, err
	}
	return server.Outcome{Result: in.Payload, HasResult: true}, nil
}
`},
}
