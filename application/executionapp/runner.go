package executionapp

import (
	"context"
	"time"
)

// Runner is the behaviour of one node type: given one input message it
// returns what the node emits. Runners run outside any transaction, may be
// run more than once for the same item (a crash between their side effect and
// the commit re-runs it), and must honour ctx: it is cancelled on KILL, on an
// immediate node stop, on fail-fast and when the node's timeout passes.
type Runner interface {
	Run(ctx context.Context, in Invocation) (Outcome, error)
}

// Remote is the behaviour of a node type whose messages remote workers take
// from a queue (TASK; plugin.Descriptor.TaskFunc): the engine never runs
// it, and checks through it what goes out to a worker and what comes back.
type Remote interface {
	Runner
	// CheckInput says why a message may not be handed to a worker; the
	// message will not change, so it fails the node.
	CheckInput(config map[string]any, payload any) error
	// CheckOutput says why a worker's output is not the node's; it fails
	// that attempt, and the node's retry policy applies.
	CheckOutput(config map[string]any, output any) error
}

// Runners finds the Runner of a node type.
type Runners interface {
	Runner(nodeType string) (Runner, bool)
}

// Invocation is one message arriving at one node.
type Invocation struct {
	SessionID   string
	WorkflowID  string
	ExecutionID string
	NodeID      string
	NodeType    string
	ItemID      int64
	// IdempotencyKey is stable across retries and re-runs of this item
	// (execution id + node id + item id); HTTP_REQUEST sends it.
	IdempotencyKey string
	// Attempt counts runs of this item, from 1.
	Attempt int
	// Config is the node's config with the type's defaults applied.
	Config map[string]any
	// Payload is the message: a JSON value (map[string]any, []any, string,
	// float64 or json.Number, bool, nil).
	Payload any
	// Execution describes the run for expressions: executionId, sessionId,
	// workflowId, startedAt (RFC 3339), trigger payload under "input".
	Execution map[string]any
	// Now is the time the engine considers current for this run.
	Now time.Time
	// Resume is set when the item comes back after the node parked it with
	// Outcome.Defer or Outcome.Park. It is nil on the first run.
	Resume *Resume
}

// Resume tells a node why a parked item is back.
type Resume struct {
	// Answer is set when a person or program answered the input the node
	// requested (Outcome.Park); nil when a Defer timer fired.
	Answer any
	// AnsweredBy is the actor who answered.
	AnsweredBy string
}

// Outcome is what one run of a node produced.
type Outcome struct {
	// Emits go out on the named ports; each becomes one message on every
	// edge whose sourcePort matches.
	Emits []Emit
	// Logs are written to the execution's log with the node id.
	Logs []LogLine
	// Defer parks the item until the given time (durably: no goroutine
	// sleeps), then runs the node again with Resume set. DELAY uses it.
	Defer time.Time
	// Park parks the item until someone answers the input, then runs the
	// node again with Resume.Answer set. INPUT_REQUEST uses it.
	Park *InputRequest
	// Result, when HasResult, is stored as the execution's result (RESULT).
	Result    any
	HasResult bool
}

// Emit is one outgoing message.
type Emit struct {
	Port    string
	Payload any
}

// LogLine is one line a node wants in the execution log.
type LogLine struct {
	Level   string // debug, info, warn, error
	Message string
}

// InputRequest asks a person, agent or supervisor for an answer.
type InputRequest struct {
	Prompt string
	// Schema is an optional JSON schema the answer must satisfy.
	Schema map[string]any
}

// Log helpers keep runner code short.

// Info returns an info log line.
func Info(msg string) LogLine { return LogLine{Level: "info", Message: msg} }

// Warn returns a warn log line.
func Warn(msg string) LogLine { return LogLine{Level: "warn", Message: msg} }
