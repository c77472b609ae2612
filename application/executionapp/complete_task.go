package executionapp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// CompleteInput is a worker's answer with the task's output.
type CompleteInput struct {
	Worker     Worker
	TaskID     string
	LeaseToken string
	Output     any
	// Port is the output port; empty means "default".
	Port string
	// Usage and Cost are what the worker reported, as decoded JSON objects
	// (nil when absent: absent is not zero); Handle reads them with
	// execution.ParseUsage and execution.ParseCost.
	Usage, Cost map[string]any
}

// TaskOutcome is what became of an answered attempt.
type TaskOutcome string

// The outcomes.
const (
	TaskCompleted TaskOutcome = "completed"
	TaskRetrying  TaskOutcome = "retrying"
	TaskFailed    TaskOutcome = "failed"
)

// TaskAnswered is the reply to a complete or a fail.
type TaskAnswered struct {
	TaskID  string
	Attempt int
	Outcome TaskOutcome
	// Reason is set when a complete failed the attempt (its output did not
	// match the node's outputSchema).
	Reason string
}

// ErrOutputRefused is matched by a complete whose output failed the
// attempt (outputSchema): the answer was applied, as a failure.
var ErrOutputRefused = fmt.Errorf("the output failed the attempt: %w", fault.ErrInvalid)

// CompleteTask applies a worker's output to the task it holds, once.
type CompleteTask struct {
	engine *Engine
	leases TaskLeases
}

// NewCompleteTask returns the use case.
func NewCompleteTask(e *Engine, leases TaskLeases) *CompleteTask {
	return &CompleteTask{engine: e, leases: leases}
}

// Handle completes. A refused output (outputSchema) fails the attempt and
// returns ErrOutputRefused with the answer.
func (uc *CompleteTask) Handle(ctx context.Context, in CompleteInput) (TaskAnswered, error) {
	l, err := findLease(ctx, uc.leases, in.Worker, in.TaskID, in.LeaseToken)
	if err != nil {
		return TaskAnswered{}, err
	}
	if l.Skipped {
		return TaskAnswered{}, uc.engine.passSkipped(ctx, in.Worker, l)
	}
	r, err := uc.engine.runs.get(ctx, l.ExecutionID)
	if err != nil {
		return TaskAnswered{}, err
	}
	node := r.nodes[l.NodeID]
	port := in.Port
	if port == "" {
		port = "default"
	}
	if ports := uc.engine.ports(node); !slices.Contains(ports, port) {
		return TaskAnswered{}, fault.Newf(fault.ErrInvalid, "port %q is not a port of node %s; its ports are %s (declare more in its config's ports)",
			port, l.NodeID, strings.Join(ports, ", "))
	}
	// A report the parsers refuse refuses the whole answer, before
	// anything (a refused output) is applied.
	task, err := spendOf(in)
	if err != nil {
		return TaskAnswered{}, err
	}
	task.port = port
	res := result{claim: l.claimOf(), run: r, began: l.ClaimedAt, ended: uc.engine.now()}
	if remote, ok := uc.engine.remote(node.typ); ok {
		if err := remote.CheckOutput(node.config, in.Output); err != nil {
			res.err = err
			a, aerr := uc.engine.answer(ctx, uc.leases, in.Worker, l, res)
			if aerr != nil {
				return a, aerr
			}
			a.Reason = r.mask(errorText(err))
			return a, fault.Newf(ErrOutputRefused, "%s; the attempt counts as failed (%s)", a.Reason, a.Outcome)
		}
	}
	res.out = Outcome{Emits: []Emit{{Port: port, Payload: in.Output}}}
	if err := uc.engine.cfg.Limits.check(&res.out); err != nil {
		return TaskAnswered{}, fault.Newf(fault.ErrInvalid, "output: %s; nothing changed: send a smaller output, or fail the task", strings.TrimPrefix(err.Error(), "message: "))
	}
	res.task = task
	return uc.engine.answer(ctx, uc.leases, in.Worker, l, res)
}

// spendOf reads a worker's usage and cost with the domain's strict
// parsers (docs/journal.md#spend): every violation at once, each naming its
// member, and nothing changed. What is kept is the parsed report's stored
// form, so the event never holds a member the fold cannot read.
func spendOf(in CompleteInput) (*taskAnswer, error) {
	var a taskAnswer
	var bad []fault.Violation
	if in.Usage != nil {
		u, v := execution.ParseUsage(in.Usage)
		bad = append(bad, v...)
		if u != nil {
			a.usage = u.ToData()
		}
	}
	if in.Cost != nil {
		c, v := execution.ParseCost(in.Cost)
		bad = append(bad, v...)
		if c != nil {
			a.cost = c.ToData()
		}
	}
	if len(bad) > 0 {
		return nil, &fault.ValidationError{Subject: "task answer", Violations: bad}
	}
	return &a, nil
}

// FailInput is a worker's report that an attempt failed.
type FailInput struct {
	Worker     Worker
	TaskID     string
	LeaseToken string
	Error      string
	// Retryable lets the node's retry policy try again; false fails the
	// node at once.
	Retryable bool
}

// FailTask applies a worker's failure to the task it holds, once.
type FailTask struct {
	engine *Engine
	leases TaskLeases
}

// NewFailTask returns the use case.
func NewFailTask(e *Engine, leases TaskLeases) *FailTask {
	return &FailTask{engine: e, leases: leases}
}

// Handle fails the attempt.
func (uc *FailTask) Handle(ctx context.Context, in FailInput) (TaskAnswered, error) {
	msg := strings.TrimSpace(in.Error)
	if msg == "" {
		return TaskAnswered{}, fault.Newf(fault.ErrInvalid, "error must say what went wrong; it goes to the run's log")
	}
	l, err := findLease(ctx, uc.leases, in.Worker, in.TaskID, in.LeaseToken)
	if err != nil {
		return TaskAnswered{}, err
	}
	if l.Skipped {
		return TaskAnswered{}, uc.engine.passSkipped(ctx, in.Worker, l)
	}
	r, err := uc.engine.runs.get(ctx, l.ExecutionID)
	if err != nil {
		return TaskAnswered{}, err
	}
	res := result{claim: l.claimOf(), run: r, began: l.ClaimedAt, ended: uc.engine.now(),
		err: fmt.Errorf("%s reported: %s", in.Worker.owner(), msg), permanent: !in.Retryable}
	return uc.engine.answer(ctx, uc.leases, in.Worker, l, res)
}

// answer commits a worker's answer as the worker, and says what became of
// the attempt; an answer whose lease was lost meanwhile changes nothing.
func (e *Engine) answer(ctx context.Context, leases TaskLeases, w Worker, l TaskLease, res result) (TaskAnswered, error) {
	by := committer{owner: w.owner(), actor: w.owner(), channel: WorkerChannel}
	applied, err := e.commitCounting(ctx, nil, by, []result{res})
	if err != nil {
		if errors.Is(err, fault.ErrInvalid) {
			// The database refused the output's data; the lease holds, so
			// the worker may still fail the task.
			return TaskAnswered{}, fault.Newf(fault.ErrInvalid, "output: the value cannot be stored (%s); nothing changed", errorText(err))
		}
		return TaskAnswered{}, err
	}
	if applied == 0 {
		now, ok, lerr := leases.Lease(ctx, l.ItemID)
		if lerr != nil {
			return TaskAnswered{}, lerr
		}
		if !ok {
			return TaskAnswered{}, fault.Newf(ErrTaskNotFound, "task %d is gone", l.ItemID)
		}
		return TaskAnswered{}, lostLease(now, w)
	}
	a := TaskAnswered{TaskID: fmt.Sprint(l.ItemID), Attempt: l.Attempt, Outcome: TaskCompleted}
	if res.err != nil {
		a.Outcome = TaskFailed
		if !res.permanent && l.Attempt < res.run.nodeOrZero(l.NodeID).maxAttempts {
			a.Outcome = TaskRetrying
		}
	}
	e.tmetrics.TaskAnswered(string(a.Outcome), res.ended.Sub(res.began))
	return a, nil
}

// ports are the output ports of a node as its type declares them.
func (e *Engine) ports(n runNode) []string {
	d, ok := e.runs.catalog.Describe(n.typ)
	if !ok {
		return nil
	}
	return d.Ports(n.config)
}
