package execution_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

func restoreNode(t *testing.T, s execution.NodeState) *execution.Node {
	t.Helper()
	if s.ID == "" {
		s.ID, s.Type = "fetch", "HTTP_REQUEST"
	}
	n, err := execution.RestoreNode(s)
	if err != nil {
		t.Fatalf("RestoreNode(%+v) error = %v, want nil", s, err)
	}
	return n
}

func TestNewNode(t *testing.T) {
	t.Parallel()
	n := execution.NewNode("fetch", "HTTP_REQUEST")
	want := execution.NodeState{ID: "fetch", Type: "HTTP_REQUEST", Phase: execution.NodePending}
	if got := n.State(); !reflect.DeepEqual(got, want) {
		t.Errorf("NewNode(...).State() got %+v, want %+v", got, want)
	}
	if n.ID() != "fetch" || n.Type() != "HTTP_REQUEST" || n.Status() != execution.NodePending || !n.Live() ||
		n.Gate(execution.Running) != execution.GateOpen || n.PassThrough() || n.Breakpoint() != nil {
		t.Errorf("NewNode: got id %q type %q status %s live %v gate %v pass %v bp %v, want fetch HTTP_REQUEST PENDING true open false nil",
			n.ID(), n.Type(), n.Status(), n.Live(), n.Gate(execution.Running), n.PassThrough(), n.Breakpoint())
	}
}

func TestRestoreNode(t *testing.T) {
	t.Parallel()
	bp := &execution.Breakpoint{Field: "a", Equals: 1.0}
	tests := []struct {
		phase   execution.NodeStatus
		wantErr bool
	}{
		{execution.NodePending, false},
		{execution.NodeRunning, false},
		{execution.NodeSkipped, false},
		{execution.NodeSuccess, false},
		{execution.NodeFailure, false},
		{execution.NodeStopped, false},
		// PAUSED and WAITING are derived from flags, never stored as a phase.
		{execution.NodePaused, true},
		{execution.NodeWaiting, true},
		{"", true},
		{"DONE", true},
	}
	for _, tt := range tests {
		t.Run(string(tt.phase), func(t *testing.T) {
			t.Parallel()
			s := execution.NodeState{ID: "fetch", Type: "T", Phase: tt.phase, Paused: true, StepMode: true, Credits: 2, Skipped: true,
				Parked: 1, Breakpoint: bp, Received: 3, Emitted: 4, Error: "e", StartedAt: t0, EndedAt: t1,
				RunTime: 1500 * time.Millisecond, AttemptStartedAt: t0.Add(time.Second), AttemptEndedAt: t1}
			n, err := execution.RestoreNode(s)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), `"fetch"`) {
					t.Errorf("RestoreNode(phase %q): got %v, want an error naming the node", tt.phase, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("RestoreNode(phase %q): got %v, want nil", tt.phase, err)
			}
			if got := n.State(); !reflect.DeepEqual(got, s) {
				t.Errorf("RestoreNode(s).State() got %+v, want %+v", got, s)
			}
		})
	}
}

// TestNodeStatusDerivation covers each combination of phase and control
// flags: a terminal (or settled SKIPPED) phase wins, then skip, then pause,
// then WAITING (parked input, or step mode without credit), then the phase.
func TestNodeStatusDerivation(t *testing.T) {
	t.Parallel()
	type flags struct {
		paused, step bool
		credits      int
		skipped      bool
		parked       int
	}
	tests := []struct {
		name     string
		phase    execution.NodeStatus
		f        flags
		want     execution.NodeStatus
		wantLive bool
		wantGate execution.Gate // while the execution is RUNNING
	}{
		{"pending", execution.NodePending, flags{}, execution.NodePending, true, execution.GateOpen},
		{"running", execution.NodeRunning, flags{}, execution.NodeRunning, true, execution.GateOpen},
		{"paused", execution.NodeRunning, flags{paused: true}, execution.NodePaused, true, execution.GateClosed},
		{"paused pending", execution.NodePending, flags{paused: true}, execution.NodePaused, true, execution.GateClosed},
		{"step without credit", execution.NodeRunning, flags{step: true}, execution.NodeWaiting, true, execution.GateStep},
		{"step without credit pending", execution.NodePending, flags{step: true}, execution.NodeWaiting, true, execution.GateStep},
		{"step with credit", execution.NodeRunning, flags{step: true, credits: 1}, execution.NodeRunning, true, execution.GateStep},
		{"step with credits pending", execution.NodePending, flags{step: true, credits: 3}, execution.NodePending, true, execution.GateStep},
		{"credits without step mode", execution.NodeRunning, flags{credits: 2}, execution.NodeRunning, true, execution.GateOpen},
		{"parked", execution.NodeRunning, flags{parked: 1}, execution.NodeWaiting, true, execution.GateOpen},
		{"parked with credit", execution.NodeRunning, flags{step: true, credits: 1, parked: 2}, execution.NodeWaiting, true, execution.GateStep},
		{"paused beats step", execution.NodeRunning, flags{paused: true, step: true}, execution.NodePaused, true, execution.GateClosed},
		{"paused beats parked", execution.NodeRunning, flags{paused: true, parked: 1}, execution.NodePaused, true, execution.GateClosed},
		{"skipped", execution.NodeRunning, flags{skipped: true}, execution.NodeSkipped, true, execution.GateOpen},
		{"skipped pending", execution.NodePending, flags{skipped: true}, execution.NodeSkipped, true, execution.GateOpen},
		{"skipped beats paused", execution.NodeRunning, flags{skipped: true, paused: true}, execution.NodeSkipped, true, execution.GateClosed},
		{"skipped beats step, passes without credit", execution.NodeRunning, flags{skipped: true, step: true}, execution.NodeSkipped, true, execution.GateOpen},
		{"skipped beats parked", execution.NodeRunning, flags{skipped: true, parked: 1}, execution.NodeSkipped, true, execution.GateOpen},
		{"settled skipped", execution.NodeSkipped, flags{}, execution.NodeSkipped, false, execution.GateClosed},
		{"settled skipped beats flags", execution.NodeSkipped, flags{paused: true, step: true, parked: 1}, execution.NodeSkipped, false, execution.GateClosed},
		{"success", execution.NodeSuccess, flags{}, execution.NodeSuccess, false, execution.GateClosed},
		{"success beats flags", execution.NodeSuccess, flags{paused: true, step: true, skipped: true, parked: 1}, execution.NodeSuccess, false, execution.GateClosed},
		{"failure beats flags", execution.NodeFailure, flags{paused: true, skipped: true}, execution.NodeFailure, false, execution.GateClosed},
		{"stopped beats flags", execution.NodeStopped, flags{step: true, parked: 1}, execution.NodeStopped, false, execution.GateClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := restoreNode(t, execution.NodeState{Phase: tt.phase, Paused: tt.f.paused, StepMode: tt.f.step, Credits: tt.f.credits,
				Skipped: tt.f.skipped, Parked: tt.f.parked})
			if got := n.Status(); got != tt.want {
				t.Errorf("Status() got %s, want %s", got, tt.want)
			}
			if got := n.Live(); got != tt.wantLive {
				t.Errorf("Live() got %v, want %v", got, tt.wantLive)
			}
			if got := n.Gate(execution.Running); got != tt.wantGate {
				t.Errorf("Gate(RUNNING) got %v, want %v", got, tt.wantGate)
			}
			for _, ex := range []execution.Status{execution.Pending, execution.Paused, execution.Success, execution.Failure, execution.Stopped} {
				if got := n.Gate(ex); got != execution.GateClosed {
					t.Errorf("Gate(%s) got %v, want closed: only a RUNNING execution lets messages through", ex, got)
				}
			}
			if got := n.PassThrough(); got != tt.f.skipped {
				t.Errorf("PassThrough() got %v, want %v", got, tt.f.skipped)
			}
		})
	}
}

// nodeOp is a Node method that can refuse.
type nodeOp struct {
	name string
	do   func(*execution.Node) error
}

var nodeOps = []nodeOp{
	{"Pause", (*execution.Node).Pause},
	{"Resume", (*execution.Node).Resume},
	{"EnableStep", (*execution.Node).EnableStep},
	{"DisableStep", (*execution.Node).DisableStep},
	{"Step", (*execution.Node).Step},
	{"Skip", (*execution.Node).Skip},
	{"Unskip", (*execution.Node).Unskip},
	{"SetBreakpoint", func(n *execution.Node) error { return n.SetBreakpoint(execution.Breakpoint{Field: "x", Equals: 1.0}) }},
	{"ClearBreakpoint", (*execution.Node).ClearBreakpoint},
	{"HitBreakpoint", (*execution.Node).HitBreakpoint},
	{"Stop", func(n *execution.Node) error { return n.Stop(t1) }},
	{"Fail", func(n *execution.Node) error { return n.Fail(t1, "boom") }},
}

// TestNodeMethodsOnFinishedNodes: every method that can refuse refuses on a
// node that has ended (terminal, or settled SKIPPED) with ErrNodeNotLive and
// changes nothing.
func TestNodeMethodsOnFinishedNodes(t *testing.T) {
	t.Parallel()
	for _, phase := range []execution.NodeStatus{execution.NodeSuccess, execution.NodeFailure, execution.NodeStopped, execution.NodeSkipped} {
		for _, op := range nodeOps {
			t.Run(string(phase)+"/"+op.name, func(t *testing.T) {
				t.Parallel()
				n := restoreNode(t, execution.NodeState{Phase: phase, StepMode: true, Received: 2, EndedAt: t0})
				before := n.State()
				err := op.do(n)
				if !errors.Is(err, execution.ErrNodeNotLive) || !errors.Is(err, fault.ErrConflict) {
					t.Fatalf("%s on %s: got %v, want ErrNodeNotLive (a fault.ErrConflict)", op.name, phase, err)
				}
				for _, want := range []string{`"fetch"`, string(phase), "RETRY"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s on %s: got message %q, want it to name %s", op.name, phase, err, want)
					}
				}
				// The detail is shown verbatim (HTTP 409, MCP isError): no trailing sentinel texts.
				if strings.Contains(err.Error(), "conflict") || strings.Contains(err.Error(), "execution:") {
					t.Errorf("%s on %s: got message %q, want the sentence alone", op.name, phase, err)
				}
				if got := n.State(); !reflect.DeepEqual(got, before) {
					t.Errorf("%s on %s: got state %+v, want %+v unchanged", op.name, phase, got, before)
				}
			})
		}
	}
}

// TestNodeMethodsOnLiveNodes applies each method to a live node and checks
// the visible status and the stored form.
func TestNodeMethodsOnLiveNodes(t *testing.T) {
	t.Parallel()
	bp := execution.Breakpoint{Field: "order.status", Equals: "error"}
	tests := []struct {
		name  string
		start execution.NodeState
		do    func(*execution.Node) error
		want  execution.NodeStatus
		check func(execution.NodeState) bool
	}{
		{"pause", execution.NodeState{Phase: execution.NodeRunning}, (*execution.Node).Pause, execution.NodePaused,
			func(s execution.NodeState) bool { return s.Paused }},
		{"pause keeps step mode", execution.NodeState{Phase: execution.NodeRunning, StepMode: true, Credits: 1}, (*execution.Node).Pause,
			execution.NodePaused, func(s execution.NodeState) bool { return s.Paused && s.StepMode && s.Credits == 1 }},
		{"resume", execution.NodeState{Phase: execution.NodeRunning, Paused: true}, (*execution.Node).Resume, execution.NodeRunning,
			func(s execution.NodeState) bool { return !s.Paused }},
		{"resume into step mode waits", execution.NodeState{Phase: execution.NodeRunning, Paused: true, StepMode: true},
			(*execution.Node).Resume, execution.NodeWaiting, func(s execution.NodeState) bool { return !s.Paused && s.StepMode }},
		{"resume an unpaused node", execution.NodeState{Phase: execution.NodePending}, (*execution.Node).Resume, execution.NodePending,
			func(s execution.NodeState) bool { return !s.Paused }},
		{"enable step", execution.NodeState{Phase: execution.NodeRunning}, (*execution.Node).EnableStep, execution.NodeWaiting,
			func(s execution.NodeState) bool { return s.StepMode && s.Credits == 0 }},
		{"enable step resets credits", execution.NodeState{Phase: execution.NodeRunning, StepMode: true, Credits: 3},
			(*execution.Node).EnableStep, execution.NodeWaiting, func(s execution.NodeState) bool { return s.StepMode && s.Credits == 0 }},
		{"enable step while paused stays paused", execution.NodeState{Phase: execution.NodeRunning, Paused: true},
			(*execution.Node).EnableStep, execution.NodePaused, func(s execution.NodeState) bool { return s.StepMode && s.Paused }},
		{"disable step", execution.NodeState{Phase: execution.NodeRunning, StepMode: true, Credits: 2}, (*execution.Node).DisableStep,
			execution.NodeRunning, func(s execution.NodeState) bool { return !s.StepMode && s.Credits == 0 }},
		{"disable step while paused stays paused", execution.NodeState{Phase: execution.NodeRunning, Paused: true, StepMode: true},
			(*execution.Node).DisableStep, execution.NodePaused, func(s execution.NodeState) bool { return !s.StepMode && s.Paused }},
		{"step", execution.NodeState{Phase: execution.NodeRunning, StepMode: true}, (*execution.Node).Step, execution.NodeRunning,
			func(s execution.NodeState) bool { return s.Credits == 1 }},
		{"step adds up", execution.NodeState{Phase: execution.NodePending, StepMode: true, Credits: 1}, (*execution.Node).Step,
			execution.NodePending, func(s execution.NodeState) bool { return s.Credits == 2 }},
		{"step while paused", execution.NodeState{Phase: execution.NodeRunning, StepMode: true, Paused: true}, (*execution.Node).Step,
			execution.NodePaused, func(s execution.NodeState) bool { return s.Credits == 1 }},
		{"skip", execution.NodeState{Phase: execution.NodePending}, (*execution.Node).Skip, execution.NodeSkipped,
			func(s execution.NodeState) bool { return s.Skipped }},
		{"unskip", execution.NodeState{Phase: execution.NodeRunning, Skipped: true}, (*execution.Node).Unskip, execution.NodeRunning,
			func(s execution.NodeState) bool { return !s.Skipped }},
		{"unskip a paused node", execution.NodeState{Phase: execution.NodeRunning, Skipped: true, Paused: true}, (*execution.Node).Unskip,
			execution.NodePaused, func(s execution.NodeState) bool { return !s.Skipped }},
		{"set breakpoint", execution.NodeState{Phase: execution.NodeRunning},
			func(n *execution.Node) error { return n.SetBreakpoint(bp) }, execution.NodeRunning,
			func(s execution.NodeState) bool { return reflect.DeepEqual(s.Breakpoint, &bp) }},
		{"set breakpoint replaces", execution.NodeState{Phase: execution.NodeRunning, Breakpoint: &execution.Breakpoint{Condition: "true"}},
			func(n *execution.Node) error { return n.SetBreakpoint(bp) }, execution.NodeRunning,
			func(s execution.NodeState) bool { return reflect.DeepEqual(s.Breakpoint, &bp) }},
		{"clear breakpoint", execution.NodeState{Phase: execution.NodeRunning, Breakpoint: &bp}, (*execution.Node).ClearBreakpoint,
			execution.NodeRunning, func(s execution.NodeState) bool { return s.Breakpoint == nil }},
		{"clear breakpoint keeps a hit pause", execution.NodeState{Phase: execution.NodeRunning, Breakpoint: &bp, Paused: true},
			(*execution.Node).ClearBreakpoint, execution.NodePaused, func(s execution.NodeState) bool { return s.Breakpoint == nil && s.Paused }},
		{"hit breakpoint pauses", execution.NodeState{Phase: execution.NodeRunning, Breakpoint: &bp}, (*execution.Node).HitBreakpoint,
			execution.NodePaused, func(s execution.NodeState) bool { return s.Paused && s.Breakpoint != nil }},
		{"stop", execution.NodeState{Phase: execution.NodeRunning, Paused: true}, func(n *execution.Node) error { return n.Stop(t1) },
			execution.NodeStopped, func(s execution.NodeState) bool { return s.EndedAt.Equal(t1) }},
		{"stop a skipped node", execution.NodeState{Phase: execution.NodePending, Skipped: true}, func(n *execution.Node) error { return n.Stop(t1) },
			execution.NodeStopped, func(s execution.NodeState) bool { return s.EndedAt.Equal(t1) }},
		{"fail", execution.NodeState{Phase: execution.NodeRunning}, func(n *execution.Node) error { return n.Fail(t1, "boom") },
			execution.NodeFailure, func(s execution.NodeState) bool { return s.Error == "boom" && s.EndedAt.Equal(t1) }},
		{"fail a waiting node", execution.NodeState{Phase: execution.NodeRunning, Parked: 1}, func(n *execution.Node) error { return n.Fail(t1, "x") },
			execution.NodeFailure, func(s execution.NodeState) bool { return s.Error == "x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := restoreNode(t, tt.start)
			if err := tt.do(n); err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if got := n.Status(); got != tt.want {
				t.Errorf("Status() got %s, want %s", got, tt.want)
			}
			if !tt.check(n.State()) {
				t.Errorf("State() got %+v, want the change applied", n.State())
			}
		})
	}
}

func TestStepWithoutStepMode(t *testing.T) {
	t.Parallel()
	for _, start := range []execution.NodeState{
		{Phase: execution.NodePending},
		{Phase: execution.NodeRunning, Paused: true},
		{Phase: execution.NodeRunning, Skipped: true},
	} {
		n := restoreNode(t, start)
		before := n.State()
		err := n.Step()
		if !errors.Is(err, fault.ErrConflict) || errors.Is(err, execution.ErrNodeNotLive) {
			t.Fatalf("Step on %+v: got %v, want a conflict that is not ErrNodeNotLive", start, err)
		}
		if !strings.Contains(err.Error(), "STEP_ENABLE") || !strings.Contains(err.Error(), `"fetch"`) {
			t.Errorf("Step on %+v: got message %q, want it to name the node and STEP_ENABLE", start, err)
		}
		if got := n.State(); !reflect.DeepEqual(got, before) {
			t.Errorf("Step on %+v: got state %+v, want it unchanged", start, got)
		}
	}
}

// TestCreditsAndCounters follows one step-mode node: STEP adds credits,
// TakeCredit spends one per released message and never goes below zero,
// and processing or parking a message no longer touches credits (they are
// spent when the message is released, not when it runs).
func TestCreditsAndCounters(t *testing.T) {
	t.Parallel()
	type want struct {
		status            execution.NodeStatus
		credits, parked   int
		received, emitted int64
		took              bool
	}
	n := restoreNode(t, execution.NodeState{Phase: execution.NodePending, StepMode: true})
	var took bool
	take := func() { took = n.TakeCredit() }
	steps := []struct {
		name string
		do   func()
		want want
	}{
		{"no credit to take", take, want{execution.NodeWaiting, 0, 0, 0, 0, false}},
		{"step", func() { _ = n.Step() }, want{execution.NodePending, 1, 0, 0, 0, false}},
		{"step again", func() { _ = n.Step() }, want{execution.NodePending, 2, 0, 0, 0, false}},
		{"take one", take, want{execution.NodePending, 1, 0, 0, 0, true}},
		{"processed starts, spends nothing", func() { n.Processed(3) }, want{execution.NodeRunning, 1, 0, 1, 3, true}},
		{"park spends nothing", n.Park, want{execution.NodeWaiting, 1, 1, 1, 3, true}},
		{"take the last", take, want{execution.NodeWaiting, 0, 1, 1, 3, true}},
		{"take at zero", take, want{execution.NodeWaiting, 0, 1, 1, 3, false}},
		{"unpark", n.Unpark, want{execution.NodeWaiting, 0, 0, 1, 3, false}}, // step mode, no credit
		{"unpark floors at zero", n.Unpark, want{execution.NodeWaiting, 0, 0, 1, 3, false}},
		{"park twice", func() { n.Park(); n.Park() }, want{execution.NodeWaiting, 0, 2, 1, 3, false}},
		{"clear parked", n.ClearParked, want{execution.NodeWaiting, 0, 0, 1, 3, false}},
		{"processed again", func() { n.Processed(0) }, want{execution.NodeWaiting, 0, 0, 2, 3, false}},
		{"disable step", func() { _ = n.DisableStep() }, want{execution.NodeRunning, 0, 0, 2, 3, false}},
	}
	for _, s := range steps { // sequential: one node, in order
		s.do()
		st := n.State()
		got := want{n.Status(), st.Credits, st.Parked, st.Received, st.Emitted, took}
		if got != s.want {
			t.Fatalf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
	if st := n.State(); !st.StartedAt.IsZero() || st.RunTime != 0 {
		t.Errorf("StartedAt got %v and RunTime %v, want none: no plugin ran (Ran records that)", st.StartedAt, st.RunTime)
	}
}

func TestGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		state execution.NodeState
		ex    execution.Status
		want  execution.Gate
	}{
		{"free node of a running run", execution.NodeState{Phase: execution.NodeRunning}, execution.Running, execution.GateOpen},
		{"step node", execution.NodeState{Phase: execution.NodeRunning, StepMode: true, Credits: 4}, execution.Running, execution.GateStep},
		{"paused node", execution.NodeState{Phase: execution.NodeRunning, Paused: true}, execution.Running, execution.GateClosed},
		{"skipped step node", execution.NodeState{Phase: execution.NodeRunning, StepMode: true, Skipped: true}, execution.Running, execution.GateOpen},
		{"skipped paused node", execution.NodeState{Phase: execution.NodeRunning, Skipped: true, Paused: true}, execution.Running, execution.GateClosed},
		{"stopped node", execution.NodeState{Phase: execution.NodeStopped}, execution.Running, execution.GateClosed},
		{"settled skipped node", execution.NodeState{Phase: execution.NodeSkipped}, execution.Running, execution.GateClosed},
		{"paused execution", execution.NodeState{Phase: execution.NodeRunning}, execution.Paused, execution.GateClosed},
		{"pending execution", execution.NodeState{Phase: execution.NodeRunning}, execution.Pending, execution.GateClosed},
		{"finished execution", execution.NodeState{Phase: execution.NodeRunning}, execution.Stopped, execution.GateClosed},
		{"skipped node of a paused execution", execution.NodeState{Phase: execution.NodeRunning, Skipped: true}, execution.Paused, execution.GateClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := restoreNode(t, tt.state).Gate(tt.ex); got != tt.want {
				t.Errorf("Gate(%s) got %v, want %v", tt.ex, got, tt.want)
			}
		})
	}
}

func TestNodeSettle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		start     execution.NodeState
		want      execution.NodeStatus
		wantEnded bool
	}{
		{"never reached", execution.NodeState{Phase: execution.NodePending}, execution.NodeSkipped, true},
		{"never reached while paused", execution.NodeState{Phase: execution.NodePending, Paused: true}, execution.NodeSkipped, true},
		{"ran", execution.NodeState{Phase: execution.NodeRunning, Received: 2}, execution.NodeSuccess, true},
		{"ran, then paused", execution.NodeState{Phase: execution.NodeRunning, Received: 1, Paused: true}, execution.NodeSuccess, true},
		{"ran in step mode", execution.NodeState{Phase: execution.NodeRunning, Received: 1, StepMode: true}, execution.NodeSuccess, true},
		{"skipped after running", execution.NodeState{Phase: execution.NodeRunning, Received: 1, Skipped: true}, execution.NodeSkipped, true},
		{"skipped never reached", execution.NodeState{Phase: execution.NodePending, Skipped: true}, execution.NodeSkipped, true},
		{"success stays", execution.NodeState{Phase: execution.NodeSuccess, EndedAt: t0}, execution.NodeSuccess, false},
		{"failure stays", execution.NodeState{Phase: execution.NodeFailure, EndedAt: t0}, execution.NodeFailure, false},
		{"stopped stays", execution.NodeState{Phase: execution.NodeStopped, EndedAt: t0}, execution.NodeStopped, false},
		{"settled skipped stays", execution.NodeState{Phase: execution.NodeSkipped, EndedAt: t0}, execution.NodeSkipped, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := restoreNode(t, tt.start)
			n.Settle(t1)
			if got := n.Status(); got != tt.want {
				t.Errorf("Settle: got %s, want %s", got, tt.want)
			}
			if n.Live() {
				t.Errorf("Settle: got a live node, want it ended")
			}
			wantEnd := t0
			if tt.wantEnded {
				wantEnd = t1
			}
			if got := n.State().EndedAt; !got.Equal(wantEnd) {
				t.Errorf("Settle: got endedAt %v, want %v", got, wantEnd)
			}
		})
	}
}

func TestCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		start     execution.NodeState
		hadWork   bool
		want      execution.NodeStatus
		wantEnded bool
	}{
		{"never reached", execution.NodeState{Phase: execution.NodePending}, false, execution.NodeSkipped, true},
		{"holding a message it never ran (timer, parked input, queue)", execution.NodeState{Phase: execution.NodePending}, true, execution.NodeStopped, true},
		{"pending with messages received", execution.NodeState{Phase: execution.NodePending, Received: 1}, false, execution.NodeStopped, true},
		{"running", execution.NodeState{Phase: execution.NodeRunning, Received: 1}, false, execution.NodeStopped, true},
		{"running with work", execution.NodeState{Phase: execution.NodeRunning, Received: 1}, true, execution.NodeStopped, true},
		{"waiting", execution.NodeState{Phase: execution.NodeRunning, Parked: 1}, true, execution.NodeStopped, true},
		{"skip flag, never reached", execution.NodeState{Phase: execution.NodePending, Skipped: true}, false, execution.NodeSkipped, true},
		{"skip flag while running", execution.NodeState{Phase: execution.NodeRunning, Skipped: true}, false, execution.NodeStopped, true},
		{"success stays", execution.NodeState{Phase: execution.NodeSuccess, EndedAt: t0}, true, execution.NodeSuccess, false},
		{"failure stays", execution.NodeState{Phase: execution.NodeFailure, EndedAt: t0}, true, execution.NodeFailure, false},
		{"settled skipped stays", execution.NodeState{Phase: execution.NodeSkipped, EndedAt: t0}, true, execution.NodeSkipped, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := restoreNode(t, tt.start)
			n.Cut(t1, tt.hadWork)
			if got := n.Status(); got != tt.want {
				t.Errorf("Cut(hadWork=%v): got %s, want %s", tt.hadWork, got, tt.want)
			}
			wantEnd := t0
			if tt.wantEnded {
				wantEnd = t1
			}
			if got := n.State().EndedAt; !got.Equal(wantEnd) {
				t.Errorf("Cut: got endedAt %v, want %v", got, wantEnd)
			}
		})
	}
}

func TestMarkUpstreamSkipped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		start     execution.NodeState
		want      execution.NodeStatus
		wantEnded bool
	}{
		{"new node", execution.NodeState{Phase: execution.NodePending}, execution.NodeSkipped, true},
		{"paused node", execution.NodeState{Phase: execution.NodePending, Paused: true}, execution.NodeSkipped, true},
		// Terminal statuses never change (DESIGN §4).
		{"success stays", execution.NodeState{Phase: execution.NodeSuccess, EndedAt: t0}, execution.NodeSuccess, false},
		{"failure stays", execution.NodeState{Phase: execution.NodeFailure, EndedAt: t0}, execution.NodeFailure, false},
		{"stopped stays", execution.NodeState{Phase: execution.NodeStopped, EndedAt: t0}, execution.NodeStopped, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := restoreNode(t, tt.start)
			n.MarkUpstreamSkipped(t1)
			if got := n.Status(); got != tt.want {
				t.Errorf("MarkUpstreamSkipped: got %s, want %s", got, tt.want)
			}
			if n.Live() || n.Gate(execution.Running) != execution.GateClosed {
				t.Errorf("MarkUpstreamSkipped: got live %v gate %v, want an ended node behind a closed gate", n.Live(), n.Gate(execution.Running))
			}
			wantEnd := t0
			if tt.wantEnded {
				wantEnd = t1
			}
			if got := n.State().EndedAt; !got.Equal(wantEnd) {
				t.Errorf("MarkUpstreamSkipped: got endedAt %v, want %v", got, wantEnd)
			}
		})
	}
}

// TestNodeRan follows one node through its plugin's attempts: StartedAt is
// the first attempt's start, RunTime sums the attempts (not the gaps between
// them), and the node's end is its last attempt's end, not the moment it
// settled.
func TestNodeRan(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	n := execution.NewNode("fetch", "HTTP_REQUEST")
	type want struct {
		started, attemptStart, attemptEnd, ended time.Time
		run                                      time.Duration
	}
	steps := []struct {
		name string
		do   func()
		want want
	}{
		{"a failed attempt that will be retried", func() { n.Ran(t0, t0.Add(50*ms)) },
			want{t0, t0, t0.Add(50 * ms), time.Time{}, 50 * ms}},
		{"the retry, after a backoff", func() { n.Ran(t0.Add(time.Second), t0.Add(time.Second+30*ms)) },
			want{t0, t0.Add(time.Second), t0.Add(time.Second + 30*ms), time.Time{}, 80 * ms}},
		{"an attempt that finished earlier, committed later", func() { n.Ran(t0.Add(10*ms), t0.Add(20*ms)) },
			want{t0, t0.Add(time.Second), t0.Add(time.Second + 30*ms), time.Time{}, 90 * ms}},
		{"nanoseconds are cut to the microsecond, as stored", func() {
			n.Ran(t0.Add(2*time.Second+1500), t0.Add(2*time.Second+2*ms+999))
		}, want{t0, t0.Add(2*time.Second + time.Microsecond), t0.Add(2*time.Second + 2*ms), time.Time{}, 92*ms - time.Microsecond}},
		{"a wall clock stepped back is a run of 0", func() { n.Ran(t0.Add(3*time.Second), t0.Add(2*time.Second)) },
			want{t0, t0.Add(3 * time.Second), t0.Add(3 * time.Second), time.Time{}, 92*ms - time.Microsecond}},
		{"processed and settled a minute later: ended when the last attempt did", func() { n.Processed(1); n.Settle(t1) },
			want{t0, t0.Add(3 * time.Second), t0.Add(3 * time.Second), t0.Add(3 * time.Second), 92*ms - time.Microsecond}},
		{"an ended node records nothing", func() { n.Ran(t1, t1.Add(time.Second)) },
			want{t0, t0.Add(3 * time.Second), t0.Add(3 * time.Second), t0.Add(3 * time.Second), 92*ms - time.Microsecond}},
	}
	for _, s := range steps { // sequential: one node, in order
		s.do()
		st := n.State()
		got := want{st.StartedAt, st.AttemptStartedAt, st.AttemptEndedAt, st.EndedAt, st.RunTime}
		if !got.started.Equal(s.want.started) || !got.attemptStart.Equal(s.want.attemptStart) ||
			!got.attemptEnd.Equal(s.want.attemptEnd) || !got.ended.Equal(s.want.ended) || got.run != s.want.run {
			t.Fatalf("%s: got %+v, want %+v", s.name, got, s.want)
		}
	}
	if n.Status() != execution.NodeSuccess {
		t.Errorf("status got %s, want SUCCESS", n.Status())
	}
}

// TestNodeEndsWhenItsLastAttemptDid: every way a node ends takes its last
// attempt's end when its plugin ran, and the moment it ended when it never
// did.
func TestNodeEndsWhenItsLastAttemptDid(t *testing.T) {
	t.Parallel()
	ran := t0.Add(10 * time.Second)
	at := t1.Add(123456789) // not whole microseconds: the end is cut as stored
	ends := []struct {
		name string
		do   func(n *execution.Node)
	}{
		{"stop", func(n *execution.Node) { _ = n.Stop(at) }},
		{"fail", func(n *execution.Node) { _ = n.Fail(at, "boom") }},
		{"settle", func(n *execution.Node) { n.Settle(at) }},
		{"cut", func(n *execution.Node) { n.Cut(at, true) }},
		{"mark upstream skipped", func(n *execution.Node) { n.MarkUpstreamSkipped(at) }},
	}
	for _, e := range ends {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			never := execution.NewNode("a", "LOG")
			e.do(never)
			if got, want := never.State().EndedAt, at.Truncate(time.Microsecond); !got.Equal(want) {
				t.Errorf("never ran: endedAt got %v, want %v", got, want)
			}
			n := execution.NewNode("b", "LOG")
			n.Ran(t0, ran)
			e.do(n)
			if got := n.State().EndedAt; !got.Equal(ran) {
				t.Errorf("ran: endedAt got %v, want %v (its last attempt's end)", got, ran)
			}
		})
	}
}
