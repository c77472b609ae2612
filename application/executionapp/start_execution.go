package executionapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// WorkflowReader reads the current definition of a workflow.
type WorkflowReader interface {
	Workflow(ctx context.Context, sessionID, workflowID string) (session.Workflow, error)
}

// Trigger says how a run was started; it decides which trigger nodes get the
// payload.
type Trigger string

// The triggers.
const (
	// TriggerManual feeds the MANUAL nodes, and nothing else: a manual
	// start must never reach a WEBHOOK node, whose payload its signature
	// vouches for, nor any other trigger that checks what it lets in.
	TriggerManual Trigger = "MANUAL"
	// TriggerWebhook feeds the WEBHOOK nodes.
	TriggerWebhook Trigger = "WEBHOOK"
	// TriggerSchedule is a SCHEDULE node's fire (StartInput.TriggerNode
	// names the node).
	TriggerSchedule Trigger = "SCHEDULE"
)

// StartExecution starts a run: one transaction writes the execution with its
// definition snapshot, its nodes, one message per fed trigger node and an
// ExecutionStarted event. Under the scheduler limits (UseAdmission) a start
// over a limit is written PENDING, its messages held, and waits for a slot.
type StartExecution struct {
	tx        Transactor
	workflows WorkflowReader
	catalog   session.Catalog
	waker     Waker
	await     *Await
	admission *Admission
	reviews   ReviewGate
	skips     StartSkips
	now       func() time.Time
}

// NewStartExecution returns the use case; waker may be nil (no engine here),
// and so may await (a start then never waits).
func NewStartExecution(tx Transactor, w WorkflowReader, c session.Catalog, waker Waker, await *Await, now func() time.Time) *StartExecution {
	return &StartExecution{tx: tx, workflows: w, catalog: c, waker: waker, await: await, now: now}
}

// UseAdmission makes starts obey the scheduler limits: a start over a
// limit waits as PENDING until a slot frees. Without it (nil) every start
// runs at once. Call it before the first start.
func (uc *StartExecution) UseAdmission(a *Admission) { uc.admission = a }

// UseReviews holds manual starts a supervisor reviews (StartWorkflow in its
// reviews) until its verdict. Webhook and schedule starts are the
// workflow's own triggers, not commands, and are never held. Call it
// before the first start.
func (uc *StartExecution) UseReviews(g ReviewGate) { uc.reviews = g }

// UseSkips makes refused starts of paused workflows heard (the metrics).
// Call it before the first start.
func (uc *StartExecution) UseSkips(m StartSkips) { uc.skips = m }

// StartInput is a start request.
type StartInput struct {
	SessionID, WorkflowID string
	Payload               any
	IdempotencyKey        string
	Trigger               Trigger
	// TriggerNode, when set, feeds only that trigger node (SCHEDULE fires).
	TriggerNode    string
	Actor, Channel string
	// WaitSecs (at most execution.MaxWait) blocks the answer until the run
	// has ended or the wait runs out.
	WaitSecs float64
	// Pool is the slot pool the run asks for: execution.PoolReserved for
	// the runs of workflow supervisors (so they run even while the server
	// is at --max-running, up to --reserved-supervisor-slots at once), the
	// normal pool otherwise. No door sets it: only the server's own
	// supervisor engine starts runs in the reserved pool.
	Pool execution.Pool
	// Origin is what caused the run; only the supervisor intake sets it.
	Origin Origin
}

// StartResult is the started (or already started) execution.
type StartResult struct {
	ExecutionID string
	Status      execution.Status
	Created     bool
	// Waited is the run as the wait left it (nil without a wait): its final
	// status and result when Waited.Ended.
	Waited *RunOutcome
	// Review is set when a supervisor reviews the start: ExecutionID is
	// empty until the review allowed it and the run started.
	Review *ReviewTicket
}

// MaxKeyLen bounds idempotency keys.
const MaxKeyLen = 255

// Handle starts the run, or returns the one already started with the same
// idempotency key.
func (uc *StartExecution) Handle(ctx context.Context, in StartInput) (StartResult, error) {
	var vs []fault.Violation
	if n := utf8.RuneCountInString(in.IdempotencyKey); n > MaxKeyLen {
		vs = append(vs, fault.Violation{Path: "Idempotency-Key", Message: fmt.Sprintf("is %d characters long; the limit is %d", n, MaxKeyLen)})
	}
	if !(in.WaitSecs >= 0 && in.WaitSecs <= execution.MaxWait.Seconds()) { // also refuses NaN
		vs = append(vs, fault.Violation{Path: "wait", Message: fmt.Sprintf("must be between 0 and %d seconds, got %v", int(execution.MaxWait.Seconds()), in.WaitSecs)})
	}
	if !in.Pool.Valid() {
		vs = append(vs, fault.Violation{Path: "pool", Message: fmt.Sprintf("%q is not a slot pool; use the normal pool or %q", in.Pool, execution.PoolReserved)})
	}
	if len(vs) > 0 {
		return StartResult{}, &fault.ValidationError{Subject: "start request", Violations: vs}
	}
	if uc.reviews != nil && in.Trigger == TriggerManual && in.Pool == execution.PoolNormal {
		replay := in
		replay.WaitSecs = 0
		t, held, err := uc.reviews.Open(ctx, Reviewable{SessionID: in.SessionID, WorkflowID: in.WorkflowID, Start: &replay})
		if err != nil {
			return StartResult{}, err
		}
		if held {
			return uc.held(ctx, in, t)
		}
	}
	return uc.run(ctx, in)
}

// Reviewed starts a run its review allowed, past the gate. Only the
// review's applier calls it, with the request the door sent.
func (uc *StartExecution) Reviewed(ctx context.Context, in StartInput) (StartResult, error) {
	return uc.run(ctx, in)
}

// held answers a start under review: at once, or after waiting for the
// review to settle.
func (uc *StartExecution) held(ctx context.Context, in StartInput, t ReviewTicket) (StartResult, error) {
	wait := in.WaitSecs
	began := time.Now()
	if wait > 0 && !t.Settled {
		var err error
		if t, err = uc.reviews.Wait(ctx, t.ReviewID, time.Duration(wait*float64(time.Second))); err != nil {
			return StartResult{}, err
		}
	}
	res := StartResult{Review: &t}
	switch {
	case t.Denied != nil:
		return res, t.Denied
	case t.Applied != nil && t.Applied.Refused != "":
		return res, fault.Newf(fault.ErrConflict, "%s", t.Applied.Refused)
	case t.Applied != nil:
		res.ExecutionID, res.Status, res.Created = t.Applied.ExecutionID, execution.Status(t.Applied.Status), true
		// What is left of the wait goes to the run, as for a start that
		// was not reviewed.
		left := time.Duration(wait*float64(time.Second)) - time.Since(began)
		if left > 0 && uc.await != nil {
			out, err := uc.await.Ended(ctx, in.SessionID, []string{res.ExecutionID}, left)
			if err != nil {
				return StartResult{}, err
			}
			res.Waited, res.Status = &out[0], out[0].Status
		}
	}
	return res, nil
}

func (uc *StartExecution) run(ctx context.Context, in StartInput) (StartResult, error) {
	res, err := uc.start(ctx, in)
	if err != nil || in.WaitSecs == 0 || uc.await == nil {
		return res, err
	}
	out, err := uc.await.Ended(ctx, in.SessionID, []string{res.ExecutionID}, time.Duration(in.WaitSecs*float64(time.Second)))
	if err != nil {
		return StartResult{}, err
	}
	res.Waited = &out[0]
	res.Status = out[0].Status
	return res, nil
}

func (uc *StartExecution) start(ctx context.Context, in StartInput) (StartResult, error) {
	res, err := uc.startRun(ctx, in)
	skipped(uc.skips, sourceOf(in.Trigger), err)
	return res, err
}

func (uc *StartExecution) startRun(ctx context.Context, in StartInput) (StartResult, error) {
	w, err := uc.workflows.Workflow(ctx, in.SessionID, in.WorkflowID)
	if err != nil {
		return StartResult{}, err
	}
	feed, others := uc.triggers(w, in)
	if len(feed) == 0 {
		return StartResult{}, noTrigger(in, others)
	}
	def, err := session.MarshalDefinition(w)
	if err != nil {
		return StartResult{}, err
	}
	now := uc.now()
	runID := newID()
	var res StartResult
	var waits bool
	err = uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		// The workflow's start lock first (before the admission lock, as a
		// pause takes them): no pause commits between this read and the
		// run's commit. A paused workflow still answers an idempotent
		// replay with its run; a new run is rolled back below.
		pause, paused, err := st.Pauses.GuardStart(ctx, in.SessionID, in.WorkflowID)
		if err != nil {
			return err
		}
		// Placed next: when a limit applies, this takes the admission lock
		// before the run takes its place in the queue (queue_seq).
		ex, err := uc.admission.Place(ctx, st, PlaceInput{ID: runID, SessionID: in.SessionID, WorkflowID: in.WorkflowID, Pool: in.Pool, At: now})
		if err != nil {
			return err
		}
		waits = ex.Status() == execution.Pending
		id, created, err := st.Executions.Insert(ctx, NewExecution{
			ID: ex.ID(), SessionID: in.SessionID, WorkflowID: in.WorkflowID, Definition: def, Payload: in.Payload,
			Actor: in.Actor, Channel: in.Channel, IdempotencyKey: in.IdempotencyKey, StartedAt: now, Status: ex.Status(), Origin: in.Origin,
		})
		if errors.Is(err, ErrKeyReused) {
			return fault.Newf(ErrKeyReused, "the idempotency key %q already started execution %s of workflow %s with a different payload; "+
				"send the same payload to get that execution back, or a new key to start another run", in.IdempotencyKey, id, in.WorkflowID)
		}
		if err != nil {
			return err
		}
		res = StartResult{ExecutionID: id, Status: ex.Status(), Created: created}
		if !created {
			return nil
		}
		if paused {
			return pause.RefuseStart("start") // rolls the new run back
		}
		noteStarted(st, in.SessionID, in.WorkflowID)
		if err := uc.admission.Reserve(ctx, st, id, in.Pool); err != nil {
			return err
		}
		return seed(ctx, st, uc.catalog, w, ex, in.SessionID, feed, in.Payload, nil, in.Actor, in.Channel, in.Origin, now)
	})
	if _, ok := execution.IsPaused(err); ok {
		return StartResult{}, err // the sentence every door shows as it is
	}
	if err != nil {
		return StartResult{}, fmt.Errorf("start %s/%s: %w", in.SessionID, in.WorkflowID, err)
	}
	if waits && uc.admission != nil {
		// It may have waited only behind runs that wait for another limit;
		// the next pass decides.
		uc.admission.Nudge()
		return res, nil
	}
	wake(uc.waker)
	return res, nil
}

func wake(w Waker) {
	if w != nil {
		w.Wake()
	}
}

// triggers picks the trigger nodes a start feeds, and lists the others
// ("hook (WEBHOOK)") for an error that says how the workflow does start.
func (uc *StartExecution) triggers(w session.Workflow, in StartInput) (feed, others []string) {
	for _, n := range w.Nodes() {
		d, ok := uc.catalog.Describe(n.Type())
		if !ok || d.Category != plugin.Trigger {
			continue
		}
		switch {
		case in.TriggerNode != "" && n.ID() == in.TriggerNode:
			return []string{n.ID()}, nil
		case in.TriggerNode == "" && n.Type() == string(in.Trigger):
			feed = append(feed, n.ID())
		default:
			others = append(others, fmt.Sprintf("%s (%s)", n.ID(), n.Type()))
		}
	}
	return feed, others
}

// noTrigger says that a workflow cannot be started the way asked, and how
// it can.
func noTrigger(in StartInput, others []string) error {
	how := "it has no trigger node"
	if len(others) > 0 {
		how = "its triggers are " + strings.Join(others, ", ")
	}
	if in.Trigger == TriggerManual {
		return fault.Newf(fault.ErrConflict, "workflow %q has no MANUAL trigger, so it cannot be started by hand; %s. "+
			"Add a MANUAL node, or start it through its WEBHOOK (signed when it has a secret) or its SCHEDULE", in.WorkflowID, how)
	}
	return fault.Newf(fault.ErrConflict, "workflow %q has no %s trigger node; %s", in.WorkflowID, in.Trigger, how)
}

// seed writes the nodes, the first messages and the start event of a new
// execution. skipped marks nodes that start SKIPPED (restart from a node).
func seed(ctx context.Context, st Stores, c session.Catalog, w session.Workflow, ex *execution.Execution, sessionID string,
	feed []string, payload any, inputs map[string][]any, actor, channel string, origin Origin, now time.Time) error {
	var nodes []*execution.Node
	var skipped []string               // in the start event, so the journal sees them
	tasks := map[string]*plugin.Task{} // a restart from a TASK node queues its inputs
	for _, n := range w.Nodes() {
		nodes = append(nodes, execution.NewNode(n.ID(), n.Type()))
		if d, ok := c.Describe(n.Type()); ok {
			if t, ok := d.Task(n.Config()); ok {
				tasks[n.ID()] = &t
			}
		}
	}
	if inputs != nil { // restart from a node: everything that cannot reach it is skipped
		skip := map[string]bool{}
		for _, n := range nodes {
			skip[n.ID()] = true
		}
		for id := range inputs {
			for _, d := range reachable(w, id) {
				skip[d] = false
			}
		}
		for _, n := range nodes {
			if skip[n.ID()] {
				n.MarkUpstreamSkipped(now)
				skipped = append(skipped, n.ID())
			}
		}
	}
	if err := st.Executions.InsertNodes(ctx, ex.ID(), nodes); err != nil {
		return err
	}
	// A run that waits for a slot keeps its messages held, out of the
	// claim's sight, until the scheduler admits it and opens its gates.
	held := ex.Status() != execution.Running
	var items []NewItem
	for _, id := range feed {
		items = append(items, NewItem{ExecutionID: ex.ID(), NodeID: id, Payload: payload, AvailableAt: now, Held: held, Task: tasks[id]})
	}
	for id, ins := range inputs {
		for _, p := range ins {
			items = append(items, NewItem{ExecutionID: ex.ID(), NodeID: id, Payload: p, AvailableAt: now, Held: held, Task: tasks[id]})
		}
	}
	if len(items) > 0 {
		if err := st.Items.Insert(ctx, items); err != nil {
			return err
		}
	}
	s := ex.State()
	data := map[string]any{"status": string(s.Status), "channel": channel}
	if s.RestartOf != "" {
		data["restartOf"] = s.RestartOf
	}
	if s.FromNodeID != "" {
		data["fromNodeId"] = s.FromNodeID
	}
	if len(skipped) > 0 {
		data["skippedNodes"] = skipped
	}
	if origin.Depth > 0 {
		data["depth"], data["causedBy"] = origin.Depth, origin.Supervisor
	}
	return st.Events.Append(ctx, []Event{{Type: EventExecutionStarted, At: now, SessionID: sessionID,
		WorkflowID: s.WorkflowID, ExecutionID: ex.ID(), Actor: actor, Channel: channel, Data: data}})
}

// reachable returns id and every node downstream of it.
func reachable(w session.Workflow, id string) []string {
	out := []string{id}
	seen := map[string]bool{id: true}
	for i := 0; i < len(out); i++ {
		for _, e := range w.Edges() {
			if e.Source() == out[i] && !seen[e.Target()] {
				seen[e.Target()] = true
				out = append(out, e.Target())
			}
		}
	}
	return out
}
