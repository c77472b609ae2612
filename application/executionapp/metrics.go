package executionapp

import (
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// RunMetrics hears of runs that start and runs that end. The use cases note
// both in Stores.Runs inside the transaction that stores them; the
// transactor gives each attempt of a transaction a fresh note and passes
// on only what the attempt that committed noted. So every run counts once
// as started and once as ended, however it ends (the engine, a control
// command, stop-all, the scheduler), and never for a transaction that rolled
// back. An implementation must be cheap and safe for concurrent use.
type RunMetrics interface {
	// RunStarted: a new execution of the workflow was stored (a start, a
	// webhook, a schedule, a RESTART, RESTART_FROM_NODE or node RETRY; not
	// an idempotent replay).
	RunStarted(sessionID, workflowID string)
	// RunEnded: an execution reached the final status, took after its
	// start (waiting PENDING included).
	RunEnded(sessionID, workflowID string, status execution.Status, took time.Duration)
}

// noteStarted notes a new run in st.Runs, when the transactor keeps notes.
func noteStarted(st Stores, sessionID, workflowID string) {
	if st.Runs != nil {
		st.Runs.RunStarted(sessionID, workflowID)
	}
}

// EngineMetrics receives what the engine does, for monitoring. The engine
// calls it from its claim and commit loops, so an implementation must be
// cheap (atomic counters, no I/O) and safe for concurrent use. A nil
// EngineDeps.Metrics means none are kept.
type EngineMetrics interface {
	// Claimed reports one claim query that succeeded and took n items (0
	// when nothing was runnable).
	Claimed(n int)
	// Committed reports one transaction that committed the results of items
	// claims and took d, retries of the transaction included.
	Committed(items int, d time.Duration)
	// NodeResults reports that a commit applied n results with outcome o.
	// Results whose lease was lost are reported as OutcomeLost.
	NodeResults(o NodeOutcome, n int)
	// EngineError reports a failure the engine survives; op is one of
	// "claim", "heartbeat", "reap" and "commit" (a batch given up after its
	// retries).
	EngineError(op string)
}

// TaskMetrics hears the worker API's latencies; an EngineMetrics that also
// implements it gets them.
type TaskMetrics interface {
	// TaskDelivered reports a task delivered to a worker waited after it
	// came due.
	TaskDelivered(waited time.Duration)
	// TaskAnswered reports an attempt answered (completed, retrying,
	// failed) or lapsed, took after its delivery.
	TaskAnswered(outcome string, took time.Duration)
}

type noTaskMetrics struct{}

func (noTaskMetrics) TaskDelivered(time.Duration)        {}
func (noTaskMetrics) TaskAnswered(string, time.Duration) {}

// NodeOutcome is what became of one node result a commit handled.
type NodeOutcome uint8

// The outcomes of a node result. The set is closed, so an adapter can
// create every series up front.
const (
	// OutcomeSucceeded: the plugin ran and what it emitted was sent on.
	OutcomeSucceeded NodeOutcome = iota
	// OutcomeSkipped: the node is skipped; the message went out on every edge.
	OutcomeSkipped
	// OutcomeRetried: the attempt failed and another one is scheduled.
	OutcomeRetried
	// OutcomeFailed: the last attempt failed; the execution fails.
	OutcomeFailed
	// OutcomeDeferred: the plugin asked to run again later (a timer).
	OutcomeDeferred
	// OutcomeParked: the message waits for an answer to an input request.
	OutcomeParked
	// OutcomeBreakpoint: a breakpoint stopped the message before the node.
	OutcomeBreakpoint
	// OutcomeReleased: the item went back to the queue untouched (shutdown,
	// or its execution could not be loaded).
	OutcomeReleased
	// OutcomeDiscarded: a stop cancelled the run and dropped the item.
	OutcomeDiscarded
	// OutcomeLost: the item's lease was lost before the commit (reaped, or
	// dropped by a stop), so the result was thrown away.
	OutcomeLost

	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	OutcomeSucceeded:  "succeeded",
	OutcomeSkipped:    "skipped",
	OutcomeRetried:    "retried",
	OutcomeFailed:     "failed",
	OutcomeDeferred:   "deferred",
	OutcomeParked:     "parked",
	OutcomeBreakpoint: "breakpoint",
	OutcomeReleased:   "released",
	OutcomeDiscarded:  "discarded",
	OutcomeLost:       "lost",
}

// String is the outcome's label value, such as "succeeded".
func (o NodeOutcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// NodeOutcomes lists every outcome, in order.
func NodeOutcomes() []NodeOutcome {
	out := make([]NodeOutcome, numOutcomes)
	for i := range out {
		out[i] = NodeOutcome(i)
	}
	return out
}

// outcomeTally counts the outcomes of one commit; it lives on the stack.
type outcomeTally [numOutcomes]int

// outcome classifies a result the way itemUpdate and apply treat it.
func (r result) outcome() NodeOutcome {
	switch {
	case r.released:
		return OutcomeReleased
	case r.discarded:
		return OutcomeDiscarded
	case r.bpHit:
		return OutcomeBreakpoint
	case r.err != nil:
		if r.claim.Attempt < r.run.nodeOrZero(r.claim.NodeID).maxAttempts {
			return OutcomeRetried
		}
		return OutcomeFailed
	case !r.out.Defer.IsZero():
		return OutcomeDeferred
	case r.out.Park != nil:
		return OutcomeParked
	case r.passAll:
		return OutcomeSkipped
	}
	return OutcomeSucceeded
}

// noMetrics is the EngineMetrics of an engine given none.
type noMetrics struct{}

func (noMetrics) Claimed(int)                  {}
func (noMetrics) Committed(int, time.Duration) {}
func (noMetrics) NodeResults(NodeOutcome, int) {}
func (noMetrics) EngineError(string)           {}

// StartSkips hears of starts refused because their workflow is paused:
// a schedule's fire, a webhook delivery, a manual start or a restart that
// started nothing. Call it after the refusal; it must be cheap and safe for
// concurrent use.
type StartSkips interface {
	// StartSkipped: a start from source (one of the StartSource values)
	// was refused for reason (SkipWorkflowPaused).
	StartSkipped(source StartSource, reason string)
}

// StartSource is where a refused start came from: a closed set, so the
// metric's series are bounded.
type StartSource string

// The start sources.
const (
	SourceSchedule StartSource = "schedule"
	SourceWebhook  StartSource = "webhook"
	SourceManual   StartSource = "manual" // REST, MCP, CLI, supervisors
	SourceRestart  StartSource = "restart"
)

// StartSources lists every source, for a metric to create its series up front.
var StartSources = []StartSource{SourceSchedule, SourceWebhook, SourceManual, SourceRestart}

// SkipWorkflowPaused is the reason of a start refused because its workflow
// is paused.
const SkipWorkflowPaused = "workflow_paused"

// sourceOf is the source of a start by its trigger.
func sourceOf(t Trigger) StartSource {
	switch t {
	case TriggerWebhook:
		return SourceWebhook
	case TriggerSchedule:
		return SourceSchedule
	}
	return SourceManual
}

// skipped reports a refused start to m, when there is one and err refuses
// it for a pause.
func skipped(m StartSkips, source StartSource, err error) {
	if _, ok := execution.IsPaused(err); ok && m != nil {
		m.StartSkipped(source, SkipWorkflowPaused)
	}
}
