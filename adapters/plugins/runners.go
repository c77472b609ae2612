package plugins

import (
	"context"
	"fmt"
	"time"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/egress"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/plugin"
)

// RunnerConfig holds what the behaviours of the built-in types need from
// outside: an expression evaluator and the outbound HTTP client.
type RunnerConfig struct {
	// CEL evaluates TRANSFORM, FILTER, ROUTER and RESULT expressions; nil
	// means one built by cel.New with its defaults.
	CEL *cel.Evaluator
	// Egress sends HTTP_REQUEST and WEBHOOK_OUT calls; nil means one built
	// from EgressOptions.
	Egress *egress.Client
	// EgressOptions builds Egress when it is nil. A zero Timeout becomes
	// DefaultEgressCeiling: each node's own timeout, applied by the engine
	// as the context deadline, is the limit authors set, and the client's
	// only caps nodes configured with hours.
	EgressOptions egress.Options
}

// DefaultEgressCeiling is the client-wide limit of one outbound call when
// RunnerConfig builds the client.
const DefaultEgressCeiling = 5 * time.Minute

// NodeType is one node type as the server registers it: what Yukta knows
// about it without running it, and its behaviour. The built-ins (Builtins)
// and the types a custom server adds (Extension) are registered alike, as
// one list (NewRunnerSet for the behaviour, their descriptors for the
// catalogue), so a type is either whole or refused at startup.
type NodeType struct {
	Descriptor plugin.Descriptor
	Runner     executionapp.Runner
}

// RunnerSet holds the behaviour of every registered node type.
type RunnerSet struct {
	runners map[string]executionapp.Runner
}

var _ executionapp.Runners = (*RunnerSet)(nil)

// NewRunners returns the runners of the built-in types (Builtins).
func NewRunners(cfg RunnerConfig) (*RunnerSet, error) {
	types, err := Builtins(cfg)
	if err != nil {
		return nil, err
	}
	return NewRunnerSet(types)
}

// Builtins returns the built-in node types, each descriptor of Descriptors
// with its runner. It fails when a descriptor has no runner, so a type added
// to Descriptors without behaviour fails at startup rather than on its
// first message.
func Builtins(cfg RunnerConfig) ([]NodeType, error) {
	if cfg.CEL == nil {
		ev, err := cel.New()
		if err != nil {
			return nil, fmt.Errorf("plugins: %w", err)
		}
		cfg.CEL = ev
	}
	if cfg.Egress == nil {
		o := cfg.EgressOptions
		if o.Timeout == 0 {
			o.Timeout = DefaultEgressCeiling
		}
		c, err := egress.New(o)
		if err != nil {
			return nil, fmt.Errorf("plugins: %w", err)
		}
		cfg.Egress = c
	}
	ev, out := cfg.CEL, cfg.Egress
	runners := map[string]executionapp.Runner{
		"MANUAL":              runFunc(passThrough),
		"WEBHOOK":             runFunc(passThrough),
		"SUPERVISOR_SIGNAL":   runFunc(passThrough),
		"SCHEDULE":            runFunc(runSchedule),
		"TRANSFORM":           withCEL(ev, runTransform),
		"FILTER":              withCEL(ev, runFilter),
		"ROUTER":              withCEL(ev, runRouter),
		"RESULT":              withCEL(ev, runResult),
		"SPLIT":               runFunc(runSplit),
		"DELAY":               runFunc(runDelay),
		"INPUT_REQUEST":       InputRequestRunner{},
		"LOG":                 runFunc(runLog),
		"FAIL":                runFunc(runFail),
		"SUPERVISOR_DECISION": runFunc(runSupervisorDecision),
		"HTTP_REQUEST":        withEgress(out, runHTTPRequest),
		"WEBHOOK_OUT":         withEgress(out, runWebhookOut),
		"TASK":                TaskRunner{},
	}
	ds := Descriptors()
	types := make([]NodeType, 0, len(ds))
	for _, d := range ds {
		r, ok := runners[d.Type]
		if !ok {
			return nil, fmt.Errorf("plugins: node type %s has a descriptor but no runner", d.Type)
		}
		types = append(types, NodeType{Descriptor: d, Runner: r})
	}
	return types, nil
}

// Extension makes a node type a custom server adds into one registered like
// the built-ins: a processor or terminal gets the run fields every built-in
// processor and terminal has (timeout, retry), which the engine enforces,
// unless it declares its own timeout; a trigger is kept as it is (the
// server refuses added triggers at startup: nothing would start one). The
// runner is not started on a context that is already done, like a
// built-in's.
func Extension(d plugin.Descriptor, r executionapp.Runner) NodeType {
	if d.Category != plugin.Trigger {
		d = withRunFields(d)
	}
	if r != nil {
		r = runFunc(r.Run)
	}
	return NodeType{Descriptor: d, Runner: r}
}

// NewRunnerSet returns the behaviour of types. A type without a runner, or
// a type name registered twice (an extension that reuses a built-in's name,
// or two extensions of one name), is refused with the name, so the server
// does not start with one type shadowing another.
func NewRunnerSet(types []NodeType) (*RunnerSet, error) {
	s := &RunnerSet{runners: make(map[string]executionapp.Runner, len(types))}
	for _, t := range types {
		name := t.Descriptor.Type
		if t.Runner == nil {
			return nil, fmt.Errorf("plugins: node type %s has no runner; register it with its behaviour", name)
		}
		if _, dup := s.runners[name]; dup {
			return nil, fmt.Errorf("plugins: node type %s is registered twice (a built-in and an added type, or two added types, share the name); give the added type a name of its own", name)
		}
		s.runners[name] = t.Runner
	}
	return s, nil
}

// DescriptorsOf returns the descriptors of types, in their order.
func DescriptorsOf(types []NodeType) []plugin.Descriptor {
	out := make([]plugin.Descriptor, len(types))
	for i, t := range types {
		out[i] = t.Descriptor
	}
	return out
}

// Runner returns the behaviour of nodeType.
func (s *RunnerSet) Runner(nodeType string) (executionapp.Runner, bool) {
	r, ok := s.runners[nodeType]
	return r, ok
}

// runFunc adapts a function to executionapp.Runner. It refuses to start on
// a context that is already done: the engine cancels runs it no longer
// wants (KILL, fail-fast), and starting a side effect then is wasted or
// harmful.
type runFunc func(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error)

// Run implements executionapp.Runner.
func (f runFunc) Run(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return executionapp.Outcome{}, err
	}
	return f(ctx, in)
}

// withCEL binds a runner that evaluates expressions to ev.
func withCEL(ev *cel.Evaluator, f func(context.Context, *cel.Evaluator, executionapp.Invocation) (executionapp.Outcome, error)) runFunc {
	return func(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
		return f(ctx, ev, in)
	}
}

// withEgress binds a runner that calls out to c.
func withEgress(c *egress.Client, f func(context.Context, *egress.Client, executionapp.Invocation) (executionapp.Outcome, error)) runFunc {
	return func(ctx context.Context, in executionapp.Invocation) (executionapp.Outcome, error) {
		return f(ctx, c, in)
	}
}

// emit returns an Outcome with one message on port.
func emit(port string, payload any, logs ...executionapp.LogLine) executionapp.Outcome {
	return executionapp.Outcome{Emits: []executionapp.Emit{{Port: port, Payload: payload}}, Logs: logs}
}

// vars are what an expression of in sees.
func vars(in executionapp.Invocation) cel.Vars {
	return cel.Vars{Payload: in.Payload, Execution: in.Execution, Now: in.Now}
}

// now is the engine's current time for in, or the clock's when unset.
func now(in executionapp.Invocation) time.Time {
	if in.Now.IsZero() {
		return time.Now().UTC()
	}
	return in.Now
}

// str reads a String field; absent or of another type reads as "".
func str(config map[string]any, name string) string {
	s, _ := config[name].(string)
	return s
}
