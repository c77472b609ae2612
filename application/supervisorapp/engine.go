package supervisorapp

import (
	"context"
	"errors"

	"github.com/yukta/yukta/domain/supervisor"
)

// The contract between the runtime and the engines
// (application/engines/...): the runtime drives an Engine built by the
// EngineFactory its type is registered with (RuntimeDeps.Engines), and
// does what every engine would otherwise repeat before each signal: it
// hands the engine only what its supervisor hears (supervisor.Hears: the
// kinds its engine takes, never an EVENT it caused itself unless the engine
// hears its own effects), in order, from the durable cursor, while the
// supervisor's lease is this instance's. An engine only decides; what it
// decides goes through the use cases below (DirectiveSender,
// ReviewAnswerer, Delegator, DelegationAnswerer) with its Fence, and
// SortEffect says what their answers mean, alike for every engine.

// Engine decides for one supervisor. The runtime calls it from one
// goroutine, in signal order, while the supervisor's lease is this
// instance's. Handle must be atomic as far as State is concerned: when it
// fails, State must read as before the signal, because the runtime saves
// the cursor before the failed signal with that state and hands the signal
// again to a new engine later (delivery is at least once).
type Engine interface {
	// Handle reacts to one signal. An error means the signal was not
	// handled (the database is down); it will come again.
	Handle(ctx context.Context, sig supervisor.Signal) error
	// State is what the engine needs to carry on after a restart (the
	// rules engine's count windows); nil when nothing. It is saved with the
	// cursor, in the same write.
	State() ([]byte, error)
}

// BatchEngine is an Engine that keeps reads for the length of one outbox
// batch (the rules engine reads the facts of the batch's runs once). The
// runtime calls BeginBatch with the runs the batch's EVENT signals are
// about after it read the batch, so every EVENT signal before EndBatch was
// committed before BeginBatch, and EndBatch when the batch is handled or
// has failed. TICK and STARTED come outside batches.
type BatchEngine interface {
	Engine
	BeginBatch(runs []string)
	EndBatch()
}

// EngineFactory builds the engine of a supervisor from the state saved
// with its cursor (nil: a fresh engine). fence is the lease the engine's
// directives carry.
type EngineFactory func(ctx context.Context, sup supervisor.Supervisor, fence Fence, state []byte) (Engine, error)

// EngineCloser is an Engine that holds something that must be released
// when the engine stops (the process engine's program). The runtime calls
// Close when the engine's run ends, for whatever reason (the lease lost,
// the supervisor changed or disabled, a failure, the server stopping),
// after the last Handle; Close returns once everything the engine started
// has stopped.
type EngineCloser interface {
	Engine
	Close() error
}

// DirectiveSender sends directives through the intake (*SubmitDirective).
type DirectiveSender interface {
	Handle(ctx context.Context, in SubmitInput) (DirectiveResult, error)
}

// ReviewAnswerer takes a supervisor's verdict (*AnswerReview).
type ReviewAnswerer interface {
	Handle(ctx context.Context, in AnswerInput) (supervisor.Review, error)
}

// Effect sorts what a use case answered an engine's directive, verdict or
// delegation (SortEffect).
type Effect int

// The answers an engine gets.
const (
	// EffectDone: it was carried out (or recorded for a review).
	EffectDone Effect = iota
	// EffectLeaseLost: the supervisor's lease went to another tenure
	// (ErrLeaseLost); the engine must stop, nothing was written.
	EffectLeaseLost
	// EffectLoopBound: the loop bounds refused it (supervisor.ErrLoopTooDeep,
	// supervisor.ErrBudgetExceeded). The guard logs the first of each limit
	// and window and counts every one in the metric: the engine reports
	// nothing more.
	EffectLoopBound
	// EffectRefused: it was refused (isRefusal); the same again gets the
	// same answer. The engine reports it and goes on.
	EffectRefused
	// EffectFailed: it could not be carried out (the database is down); the
	// signal was not handled and comes again.
	EffectFailed
)

// SortEffect sorts err, the answer of a use case an engine called, the one
// way every engine reads it.
func SortEffect(err error) Effect {
	switch {
	case err == nil:
		return EffectDone
	case errors.Is(err, ErrLeaseLost):
		return EffectLeaseLost
	case loopRefused(err):
		return EffectLoopBound
	case isRefusal(err):
		return EffectRefused
	}
	return EffectFailed
}

// EventVariable is the event variable conditions read (docs/supervisors.md,
// Variables): the rules engine's if and the workflow engine's when.
func EventVariable(e supervisor.EventSignal) map[string]any {
	data := e.Data
	if data == nil {
		data = map[string]any{}
	}
	return map[string]any{"seq": e.Seq, "at": e.At.UTC(), "type": e.Type, "sessionId": e.SessionID, "workflowId": e.WorkflowID,
		"executionId": e.ExecutionID, "nodeId": e.NodeID, "actor": e.Actor, "data": data}
}

// Clip shortens text that came from outside (a program's output line, a
// run's decision, a directive) for a message: at most n bytes, cut at a
// rune boundary, "…" marking the cut. Every engine clips the same way.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
