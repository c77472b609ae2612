// Package server is Yukta's public extension API: a program that imports it
// is the whole yukta binary (the server, `serve`, and every client command)
// with its own node types and adapters added, without forking the
// repository. The yukta binary itself is server.Main() with no options.
//
//	func main() {
//		server.Main(
//			server.WithNodeType(myDescriptor, server.RunnerFunc(myRun)),
//			server.WithAuditSink(mySink),
//		)
//	}
//
// A node type is exactly what a built-in is: a Descriptor (its config
// fields, ports and checks, which validation, the catalogue, REST
// /api/plugins and MCP list_plugins read) and a Runner (its behaviour). The
// built-ins register through the same path, so an added type is validated,
// retried, timed out, paused, stepped, skipped, journaled and masked like
// them. The adapters are the ports the server calls: a SecretProvider for
// the ${env.NAME} references of http supervisors' headers, and an
// AuditSink that hears every journal record.
//
// Only this package is public API; the types it aliases (from domain/ and
// application/) are public through it, with their exported fields and
// methods. Every other package of the module is internal to Yukta and may
// change in any release. docs/extending.md is the contract and the
// stability promise.
package server

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/bootstrap"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// The node type contract: what the built-ins are made of.
type (
	// Descriptor is everything Yukta knows about a node type without
	// running it: its name (Type, such as "UPPERCASE": capitals, digits
	// and _), Category, Description, Usage, config Fields, PortsFunc and
	// CheckFunc.
	Descriptor = plugin.Descriptor
	// Field is one typed config field of a node type.
	Field = plugin.Field
	// FieldType is the type of a Field.
	FieldType = plugin.FieldType
	// Category says where a node may sit: Trigger (built-ins only),
	// Processor or Terminal.
	Category = plugin.Category
	// Violation is one problem a CheckFunc reports: a path relative to the
	// node's config, and a message that says what to do.
	Violation = fault.Violation

	// Runner is the behaviour of a node type: one message in, what the
	// node emits out. It may run more than once for one message (at least
	// once) and must honour ctx.
	Runner = executionapp.Runner
	// Invocation is one message arriving at one node.
	Invocation = executionapp.Invocation
	// Outcome is what one run of a node produced.
	Outcome = executionapp.Outcome
	// Emit is one outgoing message of an Outcome.
	Emit = executionapp.Emit
	// LogLine is one line of an Outcome for the execution's log.
	LogLine = executionapp.LogLine
	// Resume tells a node why a parked message is back (Outcome.Defer or
	// Outcome.Park).
	Resume = executionapp.Resume
	// InputRequest is what Outcome.Park asks a person or program for.
	InputRequest = executionapp.InputRequest

	// AuditSink hears every journal record before the journal commits it.
	AuditSink = journalapp.AuditSink
	// AuditRecord is one journal record as an AuditSink hears it.
	AuditRecord = journalapp.AuditRecord
)

// The categories.
const (
	Trigger   = plugin.Trigger
	Processor = plugin.Processor
	Terminal  = plugin.Terminal
)

// The field types.
const (
	String     = plugin.String
	Integer    = plugin.Integer
	Number     = plugin.Number
	Boolean    = plugin.Boolean
	Object     = plugin.Object
	Array      = plugin.Array
	Duration   = plugin.Duration
	Expression = plugin.Expression
	Cron       = plugin.Cron
	URL        = plugin.URL
	Any        = plugin.Any
)

// DefaultPort is the port a non-terminal node has unless its PortsFunc says
// otherwise.
const DefaultPort = plugin.DefaultPort

// RunnerFunc adapts a function to Runner.
type RunnerFunc func(ctx context.Context, in Invocation) (Outcome, error)

// Run implements Runner.
func (f RunnerFunc) Run(ctx context.Context, in Invocation) (Outcome, error) { return f(ctx, in) }

// SecretProvider resolves the ${env.NAME} references of http supervisors'
// headers instead of the process environment (a vault, a mounted secret
// folder). It is asked only for names YUKTA_SUPERVISOR_ENV_ALLOWED allows,
// once per post and reference, so it should answer from memory; "" means
// the secret is not set (the header is sent empty and the server logs it
// once).
type SecretProvider interface {
	Secret(name string) string
}

// SecretFunc adapts a function to SecretProvider.
type SecretFunc func(name string) string

// Secret implements SecretProvider.
func (f SecretFunc) Secret(name string) string { return f(name) }

// Option adds to the server Main runs.
type Option func(*options) error

type options struct {
	ext bootstrap.Extensions
}

// WithNodeType adds a node type, a Processor or a Terminal. It gets the
// run fields every built-in processor and terminal has (timeout, retry),
// which the engine enforces; a type that declares its own timeout keeps
// it. `serve` refuses to start (exit code 2, one line naming the type) when
// the descriptor is malformed (Descriptor rules), when it is a Trigger
// (runs start only through the built-in triggers, so nothing would start
// it), when runner is nil, or when the name is taken (a built-in's or
// another added type's).
func WithNodeType(d Descriptor, runner Runner) Option {
	return func(o *options) error {
		o.ext.NodeTypes = append(o.ext.NodeTypes, plugins.Extension(d, runner))
		return nil
	}
}

// WithSecretProvider makes p resolve the ${env.NAME} references of http
// supervisors' headers. At most one.
func WithSecretProvider(p SecretProvider) Option {
	return func(o *options) error {
		if p == nil {
			return fmt.Errorf("WithSecretProvider: the provider is nil")
		}
		if o.ext.Secrets != nil {
			return fmt.Errorf("WithSecretProvider is given twice; one provider resolves every reference")
		}
		o.ext.Secrets = p.Secret
		return nil
	}
}

// WithAuditSink makes s hear every journal record (see AuditSink for when,
// and what an error does). At most one.
func WithAuditSink(s AuditSink) Option {
	return func(o *options) error {
		if s == nil {
			return fmt.Errorf("WithAuditSink: the sink is nil")
		}
		if o.ext.Audit != nil {
			return fmt.Errorf("WithAuditSink is given twice; one sink hears every record (fan out inside it)")
		}
		o.ext.Audit = s
		return nil
	}
}

// Main runs the yukta command line with opts added, on the process's
// arguments, and exits with its exit code.
func Main(opts ...Option) {
	os.Exit(Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, opts...))
}

// Run is Main without the exit: it runs the command line on args and
// returns the exit code (2 when an option is refused).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...Option) int {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			fmt.Fprintf(stderr, "yukta: %v\n", err)
			return 2
		}
	}
	return bootstrap.MainWith(ctx, o.ext, args, stdout, stderr)
}
