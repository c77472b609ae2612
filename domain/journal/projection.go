package journal

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// Status is the coarse status of a run or node in a projection.
type Status string

// The projection statuses: down covers failure and stop alike, so runs and
// nodes join on one failure population.
const (
	StatusRunning Status = "running"
	StatusDone    Status = "done"
	StatusDown    Status = "down"
)

// The event types the projection reads (DESIGN §6).
const (
	eventExecutionStarted       = "ExecutionStarted"
	eventExecutionStatusChanged = "ExecutionStatusChanged"
	eventNodeStatusChanged      = "NodeStatusChanged"
)

// Projection is the read model folded from one execution's journal: the run
// view, one view per node that changed status, and the spend its workers
// reported. A value the journal does not hold is absent (nil), never a
// made-up zero.
type Projection struct {
	ExecutionID string     `json:"executionId,omitempty"`
	Run         RunView    `json:"run"`
	Nodes       []NodeView `json:"nodes"` // by id
	// Spend is the journal's TaskCompleted events folded by
	// execution.FoldSpend, the fold the execution read uses: per node,
	// per run, and the nodes whose usage or cost is partial (spendGaps,
	// costGaps). A task that reported no usage is a gap, never a zero.
	Spend execution.Spend `json:"spend"`
}

// RunView is the execution as the journal saw it.
type RunView struct {
	// Status is done after SUCCESS, down after FAILURE or STOPPED, running
	// otherwise (including before any ExecutionStatusChanged).
	Status Status `json:"status"`
	// EngineStatus is the last status an ExecutionStatusChanged named.
	EngineStatus string `json:"engineStatus,omitempty"`
	// Error is the error of the last ExecutionStatusChanged that had one.
	Error string `json:"error,omitempty"`
	// SettledAt is when the execution first reached a terminal status.
	SettledAt *time.Time `json:"settledAt,omitempty"`

	FirstSequence   int64      `json:"firstSequence,omitempty"`
	LastSequence    int64      `json:"lastSequence,omitempty"`
	FirstObservedAt *time.Time `json:"firstObservedAt,omitempty"`
	LastObservedAt  *time.Time `json:"lastObservedAt,omitempty"`

	Events    Counts `json:"events"`
	Decisions Counts `json:"decisions"`
}

// Counts counts records by target (the node id, or the execution id when the
// body names no node) and by type (the body's "type"; "unknown" when absent).
type Counts struct {
	Total    int            `json:"total"`
	ByTarget map[string]int `json:"byTarget"`
	ByType   map[string]int `json:"byType"`
}

// NodeView is one node as its NodeStatusChanged events describe it.
type NodeView struct {
	ID string `json:"id"`
	// Status is done after SUCCESS and once a SKIPPED node has settled
	// (SettledAt is set), down after FAILURE or STOPPED, running otherwise
	// (a node under SKIP that may still be unskipped is running).
	Status Status `json:"status"`
	// EngineStatus is the last status a NodeStatusChanged named (PENDING,
	// RUNNING, …, SKIPPED, SUCCESS, FAILURE, STOPPED).
	EngineStatus string `json:"engineStatus,omitempty"`
	Error        string `json:"error,omitempty"`
	// Received and Emitted are the counts the last NodeStatusChanged carried.
	Received *int64 `json:"received,omitempty"`
	Emitted  *int64 `json:"emitted,omitempty"`
	// StartedAt, SettledAt and WallMs are the node's startedAt, endedAt and
	// wallMs as the status API shows them, from the last NodeStatusChanged
	// that carried them: when its plugin first started (absent if it never
	// ran), when the node ended (its last attempt's end, or when it ended if
	// its plugin never ran; absent while it is live), and the plugin's run
	// time summed over attempts. Events written before nodes were timed
	// carry none of these: then StartedAt is the first time the node left
	// PENDING, SettledAt the first time it reached a terminal status (for a
	// SKIPPED node of a settled run, its last change to SKIPPED), both as
	// the events' times, and WallMs is SettledAt − StartedAt when both are
	// known. A node a restart from a node starts SKIPPED has SettledAt at the
	// start and WallMs 0.
	StartedAt *time.Time `json:"startedAt,omitempty"`
	SettledAt *time.Time `json:"settledAt,omitempty"`
	WallMs    *int64     `json:"wallMs,omitempty"`

	// The span of every record that names the node (its "nodeId"), of any
	// type, and how many events and decisions those are.
	FirstSequence   int64     `json:"firstSequence"`
	LastSequence    int64     `json:"lastSequence"`
	FirstObservedAt time.Time `json:"firstObservedAt"`
	LastObservedAt  time.Time `json:"lastObservedAt"`
	EventCount      int       `json:"eventCount"`
	DecisionCount   int       `json:"decisionCount"`
}

// span is what the records naming one node cover.
type span struct {
	first, last       int64
	firstAt, lastAt   time.Time
	events, decisions int
}

// nodeFold is one node while its records are folded.
type nodeFold struct {
	view NodeView
	// timed: the last NodeStatusChanged carried the node's timing.
	timed bool
	// skippedAt is when the node last changed to SKIPPED (untimed events:
	// it settles there if the run settles).
	skippedAt *time.Time
}

func newCounts() Counts { return Counts{ByTarget: map[string]int{}, ByType: map[string]int{}} }

func (c *Counts) add(target, typ string) {
	c.Total++
	c.ByTarget[target]++
	c.ByType[typ]++
}

// Project folds records, in order, into the run and node views. It is a pure
// read model, rebuildable at any time; it does not verify the chain (call
// Verify first: a projection of an unverified journal proves nothing).
//
// A node's timing comes from its NodeStatusChanged data (see NodeView);
// other times of status changes come from the event's own "at" (when the
// engine made the change), and an event without a readable "at" uses the
// record's observedAt. Bodies that do not look like engine events are
// counted and otherwise ignored.
func Project(records []Record) Projection {
	p := Projection{Run: RunView{Status: StatusRunning, Events: newCounts(), Decisions: newCounts()}}
	nodes := map[string]*nodeFold{}
	spans := map[string]*span{}
	var spend []execution.SpendReport
	for i := range records {
		r := &records[i]
		if p.ExecutionID == "" {
			p.ExecutionID = r.ExecutionID
		}
		observed := r.ObservedAt
		if p.Run.FirstSequence == 0 {
			p.Run.FirstSequence, p.Run.FirstObservedAt = r.Sequence, &observed
		}
		p.Run.LastSequence, p.Run.LastObservedAt = r.Sequence, &observed

		body := r.Event
		counts := &p.Run.Events
		if r.Kind == KindDecision {
			body, counts = r.Decision, &p.Run.Decisions
		}
		nodeID := str(body["nodeId"])
		target := nodeID
		if target == "" {
			target = r.ExecutionID
		}
		typ := str(body["type"])
		if typ == "" {
			typ = "unknown"
		}
		counts.add(target, typ)
		if nodeID != "" {
			sp := spans[nodeID]
			if sp == nil {
				sp = &span{first: r.Sequence, firstAt: r.ObservedAt}
				spans[nodeID] = sp
			}
			sp.last, sp.lastAt = r.Sequence, r.ObservedAt
			if r.Kind == KindEvent {
				sp.events++
			} else {
				sp.decisions++
			}
		}
		if r.Kind != KindEvent {
			continue
		}

		data, _ := body["data"].(map[string]any)
		when := r.ObservedAt
		if t, err := time.Parse(time.RFC3339Nano, str(body["at"])); err == nil {
			when = t.UTC()
		}
		switch {
		case typ == eventExecutionStarted && nodeID == "":
			// A restart from a node starts the nodes before it SKIPPED,
			// with nothing received; the start event names them.
			skipped, _ := data["skippedNodes"].([]any)
			for _, v := range skipped {
				id := str(v)
				if id == "" || nodes[id] != nil {
					continue
				}
				var zero, zero2, zero3 int64
				settled := when
				nodes[id] = &nodeFold{timed: true, view: NodeView{ID: id, EngineStatus: string(execution.NodeSkipped),
					Received: &zero, Emitted: &zero2, SettledAt: &settled, WallMs: &zero3}}
				if spans[id] == nil {
					spans[id] = &span{first: r.Sequence, last: r.Sequence, firstAt: r.ObservedAt, lastAt: r.ObservedAt}
				}
			}
		case typ == eventExecutionStatusChanged && nodeID == "":
			foldRun(&p.Run, data, when)
		case typ == eventNodeStatusChanged && nodeID != "":
			n := nodes[nodeID]
			if n == nil {
				n = &nodeFold{view: NodeView{ID: nodeID}}
				nodes[nodeID] = n
			}
			n.fold(data, when)
		case typ == execution.EventTaskCompleted && nodeID != "":
			spend = append(spend, execution.SpendReportFromEventData(nodeID, data))
		}
	}
	p.Spend = execution.FoldSpend(spend)
	p.Nodes = make([]NodeView, 0, len(nodes))
	for id, f := range nodes {
		n := &f.view
		sp := spans[id]
		n.FirstSequence, n.LastSequence, n.FirstObservedAt, n.LastObservedAt = sp.first, sp.last, sp.firstAt, sp.lastAt
		n.EventCount, n.DecisionCount = sp.events, sp.decisions
		// A node a settled run left SKIPPED has settled too, whether or not
		// its events said so.
		if n.SettledAt == nil && n.EngineStatus == string(execution.NodeSkipped) && p.Run.SettledAt != nil {
			n.SettledAt = f.skippedAt
		}
		if !f.timed && n.StartedAt != nil && n.SettledAt != nil {
			ms := n.SettledAt.Sub(*n.StartedAt).Milliseconds()
			n.WallMs = &ms
		}
		n.Status = nodeStatus(n.EngineStatus, n.SettledAt != nil)
		p.Nodes = append(p.Nodes, *n)
	}
	slices.SortFunc(p.Nodes, func(a, b NodeView) int { return strings.Compare(a.ID, b.ID) })
	return p
}

func foldRun(run *RunView, data map[string]any, when time.Time) {
	to := str(data["to"])
	if to == "" {
		return
	}
	run.EngineStatus = to
	run.Status = coarse(to)
	if e := str(data["error"]); e != "" {
		run.Error = e
	}
	if run.SettledAt == nil && execution.Status(to).Terminal() {
		run.SettledAt = &when
	}
}

// fold reads one NodeStatusChanged. An event with the node's timing (it
// always has wallMs) states the node's startedAt, endedAt and wallMs as they
// were after the change; an older one leaves them to the events' times.
func (f *nodeFold) fold(data map[string]any, when time.Time) {
	n := &f.view
	to := str(data["to"])
	if to == "" {
		return
	}
	n.EngineStatus = to
	if e := str(data["error"]); e != "" {
		n.Error = e
	}
	if v, ok := integer(data["received"]); ok {
		n.Received = &v
	}
	if v, ok := integer(data["emitted"]); ok {
		n.Emitted = &v
	}
	if to == string(execution.NodeSkipped) {
		f.skippedAt = &when
	}
	if wall, ok := integer(data["wallMs"]); ok {
		f.timed = true
		n.WallMs = &wall
		n.StartedAt, n.SettledAt = timeAt(data["startedAt"]), timeAt(data["endedAt"])
		return
	}
	if f.timed {
		return // an untimed event after timed ones: the timing stands
	}
	if n.StartedAt == nil && to != string(execution.NodePending) {
		n.StartedAt = &when
	}
	if n.SettledAt == nil && execution.NodeStatus(to).Terminal() {
		n.SettledAt = &when
	}
}

// timeAt reads an RFC 3339 time, or nil.
func timeAt(v any) *time.Time {
	t, err := time.Parse(time.RFC3339Nano, str(v))
	if err != nil {
		return nil
	}
	t = t.UTC()
	return &t
}

// coarse maps an execution status to the projection status.
func coarse(engine string) Status {
	switch engine {
	case string(execution.Success):
		return StatusDone
	case string(execution.Failure), string(execution.Stopped):
		return StatusDown
	}
	return StatusRunning
}

// nodeStatus maps a node's engine status to the projection status: a
// SKIPPED node that has settled is done, like a SUCCESS.
func nodeStatus(engine string, settled bool) Status {
	switch execution.NodeStatus(engine) {
	case execution.NodeSuccess:
		return StatusDone
	case execution.NodeSkipped:
		if settled {
			return StatusDone
		}
	case execution.NodeFailure, execution.NodeStopped:
		return StatusDown
	}
	return StatusRunning
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// integer reads a whole JSON number, as decoded (json.Number, float64) or as
// a Go integer in a body built by hand.
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return integer(f)
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= maxSafeInteger {
			return int64(x), true
		}
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	}
	return 0, false
}
