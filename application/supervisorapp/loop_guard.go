package supervisorapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// EventSupervisorLimitReached is the outbox event that tells a supervisor
// the loop bounds refused it (docs/supervisors.md#loop-bounds): at most one
// per limit and budget window, whatever the number of refusals. It belongs
// to no session; the supervisor it names receives it as an EVENT signal.
const EventSupervisorLimitReached = "SupervisorLimitReached"

// RunOrigin is a run and what caused it.
type RunOrigin struct {
	ExecutionID string
	Origin      executionapp.Origin
}

// BudgetCount is a supervisor's budget window as counted so far, the count
// just made included.
type BudgetCount struct {
	WindowStart   time.Time
	Commands      int
	DepthRefusals int
}

// LoopStore is what the loop guard reads and counts, on every instance
// alike (PostgreSQL).
type LoopStore interface {
	// EventOrigin returns the run an outbox event is about, with its
	// origin; ok is false when the event does not exist (any more) or is
	// about no run.
	EventOrigin(ctx context.Context, seq int64) (RunOrigin, bool, error)
	// RunOrigins returns the origins of the runs of ids that exist.
	RunOrigins(ctx context.Context, ids []string) (map[string]executionapp.Origin, error)
	// CountLoop counts one directive (limit supervisor.LimitBudget) or one
	// refusal for depth (supervisor.LimitDepth) in the supervisor's budget
	// window, opening a new window of length window when the last one has
	// ended, and returns the window's counts. The events notice returns
	// for those counts are appended to the outbox in the same transaction,
	// so a notice goes out once however many instances count.
	CountLoop(ctx context.Context, supervisorID, limit string, window time.Duration,
		notice func(BudgetCount) []executionapp.Event) (BudgetCount, error)
}

// LoopMetrics hears every refusal of the loop bounds (adapters/metrics).
type LoopMetrics interface {
	LoopRefused(supervisorID, limit string)
}

// LoopGuardDeps are what the loop guard needs. OnLimit hears the refusal
// that first reaches a limit in a budget window (the server logs it): once
// per supervisor, limit and window. Bounds' zero value takes the defaults.
type LoopGuardDeps struct {
	Store   LoopStore
	Bounds  supervisor.LoopBounds
	Metrics LoopMetrics
	OnLimit func(supervisorID, limit string, err error)
	Now     func() time.Time
}

// LoopGuard applies the loop bounds to what supervisors cause: the causal
// depth of the runs their directives (and a workflow supervisor's deciding
// runs) start, and each supervisor's command budget per window. Every
// directive passes it in SubmitDirective.Handle.
type LoopGuard struct {
	d LoopGuardDeps
}

// NewLoopGuard returns the guard.
func NewLoopGuard(d LoopGuardDeps) *LoopGuard {
	if d.Bounds == (supervisor.LoopBounds{}) {
		d.Bounds = supervisor.DefaultLoopBounds()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OnLimit == nil {
		d.OnLimit = func(string, string, error) {}
	}
	return &LoopGuard{d: d}
}

// parent is what a new run reacts to: the run (of the cause's event, or
// the run a restart starts again) and its origin.
type parent struct {
	run   RunOrigin
	event int64 // the cause's event, 0 when the run came from the target
}

// Admit checks a new directive of supervisorID against the loop bounds and
// counts it toward the supervisor's budget. It returns the origin the runs
// the directive starts get (the zero Origin for a directive that starts
// none). A refusal matches supervisor.ErrLoopTooDeep or
// supervisor.ErrBudgetExceeded (both supervisor.ErrDirectiveRefused) and
// says why and how to raise the bound; nothing was done. A nil guard admits
// everything.
func (g *LoopGuard) Admit(ctx context.Context, supervisorID string, d supervisor.Directive) (executionapp.Origin, error) {
	if g == nil {
		return executionapp.Origin{}, nil
	}
	c := d.Command()
	origin, from, err := g.directiveOrigin(ctx, supervisorID, d)
	if err != nil {
		return executionapp.Origin{}, err
	}
	if origin.Depth > g.d.Bounds.MaxDepth {
		what := fmt.Sprintf("%s (key %q) would start a run", c.Type(), d.Key())
		return executionapp.Origin{}, g.refuseDepth(ctx, supervisorID, what, origin, from)
	}
	n, err := g.d.Store.CountLoop(ctx, supervisorID, supervisor.LimitBudget, supervisor.BudgetWindow, func(n BudgetCount) []executionapp.Event {
		if n.Commands != g.d.Bounds.CommandsPerMinute+1 {
			return nil
		}
		return []executionapp.Event{g.notice(supervisorID, supervisor.LimitBudget, g.budgetText(supervisorID, n), n)}
	})
	if err != nil {
		return executionapp.Origin{}, err
	}
	if n.Commands > g.d.Bounds.CommandsPerMinute {
		err := fault.Newf(supervisor.ErrBudgetExceeded, "%s", g.budgetText(supervisorID, n))
		g.refused(supervisorID, supervisor.LimitBudget, err, n.Commands == g.d.Bounds.CommandsPerMinute+1)
		return executionapp.Origin{}, err
	}
	return origin, nil
}

// Resumed returns the origin of a directive admitted before whose
// application another sender resumes (its key is pending): it is neither
// checked nor counted again.
func (g *LoopGuard) Resumed(ctx context.Context, supervisorID string, d supervisor.Directive) (executionapp.Origin, error) {
	if g == nil {
		return executionapp.Origin{}, nil
	}
	origin, _, err := g.directiveOrigin(ctx, supervisorID, d)
	return origin, err
}

// directiveOrigin is the origin of the runs d starts: from its cause, and
// for a restart or a retry from the runs its target names. A directive
// that starts no run has the zero Origin.
func (g *LoopGuard) directiveOrigin(ctx context.Context, supervisorID string, d supervisor.Directive) (executionapp.Origin, parent, error) {
	c := d.Command()
	if !supervisor.CreatesRuns(c.Type()) {
		return executionapp.Origin{}, parent{}, nil
	}
	var runs []string
	if k := c.Target().Kind(); k == supervisor.TargetExecution || k == supervisor.TargetNodes {
		runs = c.Target().ExecutionIDs()
	}
	return g.origin(ctx, supervisorID, d.Cause(), runs)
}

// admitted runs the loop guard at the top of SubmitDirective.Handle: a new
// key is admitted (checked and counted), a pending one resumed. A refusal
// is answered as a rejected directive; it is not recorded in the ledger, so
// the same key may be sent again once the budget window has passed.
func (g *LoopGuard) admitted(ctx context.Context, in SubmitInput, seen bool) (executionapp.Origin, DirectiveResult, error) {
	if seen {
		o, err := g.Resumed(ctx, in.SupervisorID, in.Directive)
		return o, DirectiveResult{}, err
	}
	o, err := g.Admit(ctx, in.SupervisorID, in.Directive)
	if err != nil && isRefusal(err) {
		return o, DirectiveResult{SupervisorID: in.SupervisorID, Key: in.Directive.Key(), Status: DirectiveRejected, Message: err.Error(),
			Outcomes: []Outcome{}, Refusal: refusalKind(err)}, err
	}
	return o, DirectiveResult{}, err
}

// AdmitRun checks a run supervisorID's engine starts itself in reaction to
// the signal at cause (a workflow supervisor's deciding run) against the
// depth bound, and returns the origin the run gets. It does not count
// toward the budget: the run's decisions do, as directives.
func (g *LoopGuard) AdmitRun(ctx context.Context, supervisorID, cause string) (executionapp.Origin, error) {
	if g == nil {
		return executionapp.Origin{}, nil
	}
	origin, from, err := g.origin(ctx, supervisorID, cause, nil)
	if err != nil {
		return executionapp.Origin{}, err
	}
	if origin.Depth > g.d.Bounds.MaxDepth {
		return executionapp.Origin{}, g.refuseDepth(ctx, supervisorID, "the deciding run for signal "+cause, origin, from)
	}
	return origin, nil
}

// origin is the origin of a run supervisorID causes in reaction to the
// event at cause (a signal cursor) or starting one of runs again: one
// deeper than the deepest of them. A cause that names no event of a run
// (a tick, a review, an event retention deleted) adds nothing, so such a
// run is depth 1 unless a run it restarts is deeper.
func (g *LoopGuard) origin(ctx context.Context, supervisorID, cause string, runs []string) (executionapp.Origin, parent, error) {
	var from parent
	found := false
	if pos, err := supervisor.ParseCursor(cause); cause != "" && err == nil && pos.Seq > 0 {
		ro, ok, err := g.d.Store.EventOrigin(ctx, pos.Seq)
		if err != nil {
			return executionapp.Origin{}, parent{}, err
		}
		if ok {
			from, found = parent{run: ro, event: pos.Seq}, true
		}
	}
	if len(runs) > 0 {
		origins, err := g.d.Store.RunOrigins(ctx, runs)
		if err != nil {
			return executionapp.Origin{}, parent{}, err
		}
		for _, id := range runs {
			if o, ok := origins[id]; ok && (!found || o.Depth > from.run.Origin.Depth) {
				from, found = parent{run: RunOrigin{ExecutionID: id, Origin: o}}, true
			}
		}
	}
	return executionapp.Origin{Depth: from.run.Origin.Depth + 1, Supervisor: supervisorID}, from, nil
}

// refuseDepth counts and answers a refusal for depth.
func (g *LoopGuard) refuseDepth(ctx context.Context, supervisorID, what string, origin executionapp.Origin, from parent) error {
	via := "execution " + from.run.ExecutionID
	if from.event > 0 {
		via = fmt.Sprintf("event %d of execution %s", from.event, from.run.ExecutionID)
	}
	by := "started by a person, a webhook or a schedule"
	if o := from.run.Origin; o.Supervisor != "" {
		by = fmt.Sprintf("caused by supervisor %q at depth %d", o.Supervisor, o.Depth)
	}
	err := fault.Newf(supervisor.ErrLoopTooDeep, "%s at causal depth %d for supervisor %q, deeper than the bound %d: it reacts to %s, %s. "+
		"Effects of supervisors' effects stop there so feedback loops end by themselves; nothing was done. "+
		"If this chain is meant, raise --supervisor-max-depth (YUKTA_SUPERVISOR_MAX_DEPTH, at most %d)",
		what, origin.Depth, supervisorID, g.d.Bounds.MaxDepth, via, by, supervisor.MaxLoopDepth)
	n, cerr := g.d.Store.CountLoop(ctx, supervisorID, supervisor.LimitDepth, supervisor.BudgetWindow, func(n BudgetCount) []executionapp.Event {
		if n.DepthRefusals != 1 {
			return nil
		}
		ev := g.notice(supervisorID, supervisor.LimitDepth, err.Error(), n)
		ev.Data["depth"], ev.Data["executionId"] = origin.Depth, from.run.ExecutionID
		return []executionapp.Event{ev}
	})
	if cerr != nil {
		return cerr
	}
	g.refused(supervisorID, supervisor.LimitDepth, err, n.DepthRefusals == 1)
	return err
}

// refused reports one refusal: to the metric always, to OnLimit (the log)
// for the first of its window.
func (g *LoopGuard) refused(supervisorID, limit string, err error, first bool) {
	if g.d.Metrics != nil {
		g.d.Metrics.LoopRefused(supervisorID, limit)
	}
	if first {
		g.d.OnLimit(supervisorID, limit, err)
	}
}

func (g *LoopGuard) budgetText(supervisorID string, n BudgetCount) string {
	ends := n.WindowStart.Add(supervisor.BudgetWindow).UTC()
	return fmt.Sprintf("supervisor %q has sent its budget of %d directives in the window since %s; nothing was done. "+
		"Directives go through again from %s. If it needs more, raise --supervisor-commands-per-minute "+
		"(YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE, at most %d)",
		supervisorID, g.d.Bounds.CommandsPerMinute, n.WindowStart.UTC().Format(time.RFC3339), ends.Format(time.RFC3339), supervisor.MaxCommandsPerMinute)
}

// notice is the SupervisorLimitReached event of a limit.
func (g *LoopGuard) notice(supervisorID, limit, msg string, n BudgetCount) executionapp.Event {
	bound := g.d.Bounds.MaxDepth
	if limit == supervisor.LimitBudget {
		bound = g.d.Bounds.CommandsPerMinute
	}
	return executionapp.Event{Type: EventSupervisorLimitReached, At: g.d.Now(), Actor: "engine", Channel: ChannelSupervisor,
		Data: map[string]any{"supervisorId": supervisorID, "limit": limit, "bound": bound, "message": msg,
			"windowStart": n.WindowStart.UTC().Format(time.RFC3339Nano),
			"windowEnds":  n.WindowStart.Add(supervisor.BudgetWindow).UTC().Format(time.RFC3339Nano)}}
}

// loopRefused reports whether err is a refusal of the loop bounds. Engines
// do not log these one by one: the guard logs the first of each window and
// counts every one in the metric.
func loopRefused(err error) bool {
	return errors.Is(err, supervisor.ErrLoopTooDeep) || errors.Is(err, supervisor.ErrBudgetExceeded)
}
