package executionapp

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// EngineActor is the actor of changes the engine makes on its own.
const EngineActor = "engine"

// EngineChannel is the channel of the engine's own changes.
const EngineChannel = "engine"

// commit applies one batch of results in one transaction: items finished or
// requeued, messages for downstream nodes, node counters and statuses, logs,
// inputs, results and events. Results whose lease was lost are dropped whole.
// tally receives the outcomes of the batch as the committed attempt saw them.
// ended receives the executions the batch ended, whose cached runs the
// caller drops once the commit holds.
func (e *Engine) commit(ctx context.Context, by committer, batch []result, tally *outcomeTally, ended, queues *[]string) error {
	now := e.now()
	return e.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		*tally, *ended, *queues = outcomeTally{}, nil, nil // the transaction may run again
		// Lock order everywhere: execution rows (in id order), then their
		// work items. Commands take the same order, so they cannot deadlock
		// with a commit.
		var ids []string
		for _, r := range batch {
			if !slices.Contains(ids, r.claim.ExecutionID) {
				ids = append(ids, r.claim.ExecutionID)
			}
		}
		w, err := newWork(ctx, st, ids, now)
		if err != nil {
			return err
		}
		w.actor, w.channel = by.actor, by.channel
		updates := make([]ItemUpdate, len(batch))
		for i, r := range batch {
			updates[i] = e.itemUpdate(r, now)
		}
		accepted, err := st.Items.Finish(ctx, by.owner, updates)
		if err != nil {
			return err
		}
		tally[OutcomeLost] = len(batch) - len(accepted)
		if len(accepted) == 0 {
			return nil
		}
		var hold []int64
		for i, r := range batch {
			if !accepted[r.claim.ItemID] {
				continue
			}
			tally[r.outcome()]++
			// A message back in the queue (retry, timer, shutdown) waits if its
			// node's gate closed while it ran. It was released once already,
			// so a step gate lets it through without a new credit.
			if updates[i].State == ItemReady && w.gate(r.claim.ExecutionID, r.claim.NodeID) == execution.GateClosed {
				hold = append(hold, r.claim.ItemID)
			}
			if err := w.apply(ctx, r, e.runs); err != nil {
				return err
			}
		}
		if len(hold) > 0 {
			if err := st.Items.Hold(ctx, hold); err != nil {
				return err
			}
		}
		if err := w.finish(ctx, e.runs); err != nil {
			return err
		}
		for id := range w.ended {
			*ended = append(*ended, id)
		}
		for _, it := range w.items {
			if it.Task != nil && !it.Held && !slices.Contains(*queues, it.Task.Queue) {
				*queues = append(*queues, it.Task.Queue)
			}
		}
		return nil
	})
}

// committer is who a commit acts as: the lease owner whose items it
// finishes, and the actor and channel of the events it writes (the engine,
// or the worker that answered a task).
type committer struct{ owner, actor, channel string }

// self is the engine committing its own claims.
func (e *Engine) self() committer {
	return committer{owner: e.owner, actor: EngineActor, channel: EngineChannel}
}

func (e *Engine) itemUpdate(r result, now time.Time) ItemUpdate {
	u := ItemUpdate{ItemID: r.claim.ItemID, Token: r.claim.Token, State: ItemDone}
	switch {
	case r.released:
		u.State, u.AvailableAt, u.Uncount = ItemReady, now, true
		u.Resumed, u.BPPassed = r.claim.Resumed, r.claim.BPPassed
	case r.discarded:
		u.State = ItemDropped
	case r.bpHit:
		// The node pauses: the message waits behind its closed gate.
		u.State, u.AvailableAt, u.BPPassed, u.Uncount = ItemHeld, now, true, true
		u.Resumed = r.claim.Resumed
	case r.err != nil:
		if r.run != nil && !r.permanent {
			if n := r.run.nodes[r.claim.NodeID]; r.claim.Attempt < n.maxAttempts {
				u.State, u.AvailableAt = ItemReady, now.Add(n.retryDelay(r.claim.Attempt))
				u.Resumed, u.BPPassed = r.claim.Resumed, true
			}
		}
	case !r.out.Defer.IsZero():
		u.State, u.AvailableAt, u.Resumed, u.BPPassed = ItemReady, r.out.Defer, true, true
	case r.out.Park != nil:
		u.State, u.Resumed, u.BPPassed = ItemParked, true, true
	}
	return u
}

// work is the state one commit loads, changes and saves.
type work struct {
	st      Stores
	now     time.Time
	execs   map[string]*execution.Execution
	nodes   map[string]map[string]*execution.Node
	before  map[string]execution.State
	nbefore map[string]map[string]execution.NodeState
	items   []NewItem
	logs    map[string][]LogEntry
	events  []Event
	ended   map[string]bool
	// actor is who caused the changes, through channel: the engine, or the
	// sender of a command.
	actor, channel string
	// results are the RESULT values to store, per execution.
	results map[string]any
}

func newWork(ctx context.Context, st Stores, ids []string, now time.Time) (*work, error) {
	execs, err := st.Executions.Lock(ctx, ids)
	if err != nil {
		return nil, err
	}
	nodes, err := st.Executions.Nodes(ctx, ids)
	if err != nil {
		return nil, err
	}
	w := &work{st: st, now: now, actor: EngineActor, channel: EngineChannel, results: map[string]any{}, execs: execs, nodes: nodes, before: map[string]execution.State{},
		nbefore: map[string]map[string]execution.NodeState{}, logs: map[string][]LogEntry{}, ended: map[string]bool{}}
	for id, ex := range execs {
		w.before[id] = ex.State()
		w.nbefore[id] = map[string]execution.NodeState{}
		for nid, n := range nodes[id] {
			w.nbefore[id][nid] = n.State()
		}
	}
	return w, nil
}

func (w *work) log(executionID, nodeID, level, msg string) {
	w.logs[executionID] = append(w.logs[executionID], LogEntry{ExecutionID: executionID, At: w.now, Level: level, NodeID: nodeID, Message: msg})
}

// apply records one accepted result.
func (w *work) apply(ctx context.Context, r result, runs *runCache) error {
	c := r.claim
	ex := w.execs[c.ExecutionID]
	if ex == nil || ex.Status().Terminal() {
		return nil // the run ended meanwhile; its work is void
	}
	n := w.nodes[c.ExecutionID][c.NodeID]
	if n == nil {
		return fmt.Errorf("execution %s has no node %q", c.ExecutionID, c.NodeID)
	}
	// Every attempt whose plugin ran counts toward the node's timing, a
	// failure that will be retried too; a run given back (shutdown) or
	// dropped by a stop does not.
	if !r.began.IsZero() && !r.released && !r.discarded {
		n.Ran(r.began, r.ended)
	}
	switch {
	case r.released || r.discarded:
	case r.bpHit:
		if err := n.HitBreakpoint(); err != nil {
			return nil // the node ended meanwhile
		}
		w.event(ex, c.NodeID, EventBreakpointHit, map[string]any{"itemId": c.ItemID, "breakpoint": bpData(c.Breakpoint)})
		w.log(c.ExecutionID, c.NodeID, "info", "breakpoint hit: node paused before this message; RESUME the node to let it through")
	case r.err != nil:
		node := r.run.nodeOrZero(c.NodeID)
		msg := r.run.mask(errorText(r.err))
		if c.Attempt < node.maxAttempts && r.run != nil && !r.permanent {
			w.log(c.ExecutionID, c.NodeID, "warn", fmt.Sprintf("attempt %d of %d failed: %s; retrying in %s", c.Attempt, node.maxAttempts, msg, node.retryDelay(c.Attempt)))
			return nil
		}
		w.log(c.ExecutionID, c.NodeID, "error", fmt.Sprintf("failed after %d attempt(s): %s", c.Attempt, msg))
		n.Processed(0)
		_ = n.Fail(w.now, msg)
		return w.failExecution(ctx, ex, fmt.Sprintf("node %s failed: %s", c.NodeID, msg))
	case !r.out.Defer.IsZero():
		w.logLines(c, r.run, r.out.Logs)
	case r.out.Park != nil:
		w.logLines(c, r.run, r.out.Logs)
		n.Park()
		in := Input{ID: newID(), SessionID: w.before[c.ExecutionID].SessionID, ExecutionID: c.ExecutionID, NodeID: c.NodeID,
			ItemID: c.ItemID, Prompt: r.run.mask(r.out.Park.Prompt), Schema: r.out.Park.Schema, Status: "open", CreatedAt: w.now}
		if err := w.st.Inputs.Create(ctx, in); err != nil {
			return err
		}
		w.event(ex, c.NodeID, EventInputRequested, map[string]any{"inputId": in.ID, "prompt": in.Prompt})
	default:
		emitted := 0
		if r.passAll {
			for _, t := range r.run.graph.AllTargets(c.NodeID) {
				w.send(r.run, c.ExecutionID, t, c.Payload)
			}
			emitted = 1
		} else {
			for _, em := range r.out.Emits {
				emitted++
				for _, t := range r.run.graph.Targets(c.NodeID, em.Port) {
					w.send(r.run, c.ExecutionID, t, em.Payload)
				}
			}
		}
		n.Processed(emitted)
		w.logLines(c, r.run, r.out.Logs)
		if r.task != nil {
			w.event(ex, c.NodeID, EventTaskCompleted, r.task.data(c))
		}
		if r.out.HasResult {
			w.results[c.ExecutionID] = r.run.maskValue(r.out.Result) // the last one in the batch wins, as it would one by one
		}
	}
	return nil
}

func (r *run) nodeOrZero(id string) runNode {
	if r == nil {
		return runNode{maxAttempts: 1}
	}
	return r.nodes[id]
}

// send queues a message for a node, unless that node has ended (a stopped
// node drops what reaches it). The message waits if the node's gate is
// closed, or is in step mode and no credit is left.
func (w *work) send(r *run, executionID, nodeID string, payload any) {
	t := w.nodes[executionID][nodeID]
	if t != nil && !t.Live() {
		return
	}
	held := false
	task := r.nodes[nodeID].task
	if t != nil && t.PassThrough() {
		task = nil // the engine passes it on; no worker needs to see it
	}
	switch w.gate(executionID, nodeID) {
	case execution.GateClosed:
		held = true
	case execution.GateStep:
		held = !t.TakeCredit()
	}
	w.items = append(w.items, NewItem{ExecutionID: executionID, NodeID: nodeID, Payload: payload, AvailableAt: w.now, Held: held, Task: task})
}

// gate is the gate of a node as this commit sees it.
func (w *work) gate(executionID, nodeID string) execution.Gate {
	ex, n := w.execs[executionID], w.nodes[executionID][nodeID]
	if ex == nil || n == nil {
		return execution.GateClosed
	}
	return n.Gate(ex.Status())
}

// reconcile puts an execution's waiting messages behind the right gates
// after a command changed them: ready where open, held where closed, and as
// many released as a step node has credits.
func (w *work) reconcile(ctx context.Context, executionID string) error {
	var open, closed []string
	var step []*execution.Node
	for id, n := range w.nodes[executionID] {
		switch w.gate(executionID, id) {
		case execution.GateOpen:
			open = append(open, id)
		case execution.GateStep:
			step = append(step, n)
			closed = append(closed, id)
		default:
			closed = append(closed, id)
		}
	}
	slices.Sort(open)
	slices.Sort(closed)
	if err := w.st.Items.Gate(ctx, executionID, open, closed); err != nil {
		return err
	}
	for _, n := range step {
		credits := n.State().Credits
		if credits == 0 {
			continue
		}
		got, err := w.st.Items.ReleaseHeld(ctx, executionID, n.ID(), credits)
		if err != nil {
			return err
		}
		for range got {
			n.TakeCredit()
		}
	}
	return nil
}

func (w *work) logLines(c Claim, r *run, lines []LogLine) {
	for _, l := range lines {
		w.log(c.ExecutionID, c.NodeID, l.Level, r.mask(l.Message))
	}
}

// failExecution is fail-fast: the run fails, queued work is dropped, running
// work is cancelled on every instance, open inputs are cancelled.
func (w *work) failExecution(ctx context.Context, ex *execution.Execution, msg string) error {
	if err := ex.Fail(w.now, msg); err != nil {
		return nil
	}
	return w.endRun(ctx, ex, true)
}

// endRun ends a run: its nodes are cut, its queued work and open inputs are
// dropped and, when cancelRunning is set (fail-fast, STOP KILL), its running
// plugins are cancelled on every instance. A STOP CANCEL lets them finish;
// their results are discarded because their items were dropped.
func (w *work) endRun(ctx context.Context, ex *execution.Execution, cancelRunning bool) error {
	w.ended[ex.ID()] = true
	counts, err := w.st.Items.LiveCounts(ctx, []string{ex.ID()})
	if err != nil {
		return err
	}
	for id, n := range w.nodes[ex.ID()] {
		n.Cut(w.now, counts[ex.ID()][id] > 0)
	}
	if _, err := w.st.Items.Drop(ctx, ex.ID(), ""); err != nil {
		return err
	}
	if err := w.st.Inputs.CancelOpen(ctx, ex.ID(), ""); err != nil {
		return err
	}
	// A DRAIN still waiting is over: the run ended another way.
	if err := w.drained(ctx, ex); err != nil {
		return err
	}
	if !cancelRunning {
		return nil
	}
	return w.st.Signals.Cancel(ctx, ex.ID(), "")
}

// drained marks the DRAIN commands of an execution that has drained as
// applied, with the event that records it.
func (w *work) drained(ctx context.Context, ex *execution.Execution) error {
	ids, err := w.st.Commands.ApplyPending(ctx, ex.ID(), w.now)
	if err != nil {
		return err
	}
	for _, id := range ids {
		w.event(ex, "", EventCommandApplied, map[string]any{"commandId": id, "message": "the execution ended: " + string(ex.Status())})
	}
	return nil
}

// finish inserts the new messages, settles nodes and executions whose work
// is done, and saves every change with its events and logs.
func (w *work) finish(ctx context.Context, runs *runCache) error {
	if len(w.items) > 0 {
		if err := w.st.Items.Insert(ctx, w.items); err != nil {
			return err
		}
	}
	var live []string
	for id, ex := range w.execs {
		if !ex.Status().Terminal() {
			live = append(live, id)
		}
	}
	if len(live) > 0 {
		counts, err := w.st.Items.LiveCounts(ctx, live)
		if err != nil {
			return err
		}
		for _, id := range live {
			r, err := runs.get(ctx, id)
			if err != nil {
				return err
			}
			execution.Settle(r.graph, w.nodes[id], counts[id], w.now)
			if len(counts[id]) == 0 {
				ex := w.execs[id]
				draining := ex.Draining()
				if err := ex.Complete(w.now); err == nil {
					w.ended[id] = true
					for _, n := range w.nodes[id] {
						n.Cut(w.now, false)
					}
					if draining {
						if err := w.drained(ctx, ex); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return w.save(ctx)
}

func (w *work) save(ctx context.Context) error {
	ids := make([]string, 0, len(w.execs))
	for id := range w.execs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	changedNodes := map[string][]*execution.Node{}
	var changedExecs []*execution.Execution
	logCounts := map[string]int{}
	for _, id := range ids {
		if r, ok := w.results[id]; ok {
			if err := w.st.Executions.SetResult(ctx, id, r); err != nil {
				return err
			}
		}
		ex := w.execs[id]
		var changed []*execution.Node
		for nid, n := range w.nodes[id] {
			before := w.nbefore[id][nid]
			after := n.State()
			if reflect.DeepEqual(before, after) {
				continue
			}
			changed = append(changed, n)
			// A node that ends is always journaled, even when its status
			// reads the same before and after (a node under SKIP settling
			// SKIPPED): the event carries its final counts.
			ended := before.EndedAt.IsZero() && !after.EndedAt.IsZero()
			if from, to := visible(before), n.Status(); from != to || ended {
				w.event(ex, nid, EventNodeStatusChanged, nodeEventData(from, to, before, after))
			}
		}
		if len(changed) > 0 {
			slices.SortFunc(changed, func(a, b *execution.Node) int { return cmpString(a.ID(), b.ID()) })
			changedNodes[id] = changed
		}
		if before, after := w.before[id], ex.State(); !reflect.DeepEqual(before, after) {
			changedExecs = append(changedExecs, ex)
			if before.Status != after.Status {
				data := map[string]any{"from": string(before.Status), "to": string(after.Status)}
				if after.Error != "" {
					data["error"] = after.Error
				}
				w.event(ex, "", EventExecutionStatusChanged, data)
				// Every status change passes here, so every end is noted
				// here, once, whoever ended the run.
				if after.Status.Terminal() && !before.Status.Terminal() && w.st.Runs != nil {
					w.st.Runs.RunEnded(before.SessionID, before.WorkflowID, after.Status, after.EndedAt.Sub(after.StartedAt))
				}
			}
		}
		if n := len(w.logs[id]); n > 0 {
			logCounts[id] = n
		}
	}
	if len(changedNodes) > 0 {
		if err := w.st.Executions.SaveNodes(ctx, changedNodes); err != nil {
			return err
		}
	}
	if len(changedExecs) > 0 {
		if err := w.st.Executions.Save(ctx, changedExecs); err != nil {
			return err
		}
	}
	if len(logCounts) > 0 {
		first, err := w.st.Executions.NextLogSeqs(ctx, logCounts)
		if err != nil {
			return err
		}
		var lines []LogEntry
		for _, id := range ids {
			for i, l := range w.logs[id] {
				l.Seq = first[id] + int64(i)
				lines = append(lines, l)
			}
		}
		if err := w.st.Logs.Append(ctx, lines); err != nil {
			return err
		}
	}
	if len(w.events) > 0 {
		return w.st.Events.Append(ctx, w.events)
	}
	return nil
}

func (w *work) event(ex *execution.Execution, nodeID, typ string, data map[string]any) {
	s := w.before[ex.ID()]
	w.events = append(w.events, Event{Type: typ, At: w.now, SessionID: s.SessionID, WorkflowID: s.WorkflowID,
		ExecutionID: ex.ID(), NodeID: nodeID, Actor: w.actor, Channel: w.channel, Data: data})
}

// visible is the status a stored node showed.
func visible(s execution.NodeState) execution.NodeStatus {
	n, err := execution.RestoreNode(s)
	if err != nil {
		return s.Phase
	}
	return n.Status()
}

// nodeEventData is the data of a NodeStatusChanged (docs/architecture.md,
// "Events"): the move, the node's counts and timing as the status API shows
// them after it (startedAt, endedAt, wallMs), and the latest attempt when
// this change recorded one (attemptStartedAt, attemptEndedAt,
// attemptWallMs). wallMs is always there, so a reader tells these events
// from older ones that carried no timing.
func nodeEventData(from, to execution.NodeStatus, before, s execution.NodeState) map[string]any {
	d := map[string]any{"from": string(from), "to": string(to), "received": s.Received, "emitted": s.Emitted,
		"wallMs": s.RunTime.Milliseconds()}
	if s.Error != "" {
		d["error"] = s.Error
	}
	if !s.StartedAt.IsZero() {
		d["startedAt"] = stamp(s.StartedAt)
	}
	if !s.EndedAt.IsZero() {
		d["endedAt"] = stamp(s.EndedAt)
	}
	if !s.AttemptEndedAt.IsZero() && (s.RunTime != before.RunTime || !s.AttemptEndedAt.Equal(before.AttemptEndedAt)) {
		d["attemptStartedAt"], d["attemptEndedAt"] = stamp(s.AttemptStartedAt), stamp(s.AttemptEndedAt)
		d["attemptWallMs"] = s.AttemptEndedAt.Sub(s.AttemptStartedAt).Milliseconds()
	}
	return d
}

// stamp is a time in an event's data: RFC 3339 in UTC, to the nanosecond
// it holds (node times hold whole microseconds).
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func bpData(bp *execution.Breakpoint) map[string]any {
	if bp == nil {
		return nil
	}
	if bp.Condition != "" {
		return map[string]any{"condition": bp.Condition}
	}
	return map[string]any{"field": bp.Field, "equals": bp.Equals}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
