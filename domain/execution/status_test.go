package execution_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

var (
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 = t0.Add(time.Minute)
)

// wantNext is the execution transition table as DESIGN §4 and
// docs/state-machines.md state it, written out independently of the code.
var wantNext = map[execution.Status][]execution.Status{
	execution.Pending: {execution.Running, execution.Paused, execution.Stopped, execution.Failure},
	execution.Running: {execution.Paused, execution.Success, execution.Failure, execution.Stopped},
	execution.Paused:  {execution.Running, execution.Pending, execution.Success, execution.Stopped, execution.Failure},
}

// move is one public method that asks for a move to a given status.
// refused names a status the table allows the move from but the method
// refuses anyway, with the sentinel it matches.
type move struct {
	name    string
	to      execution.Status
	do      func(*execution.Execution) error
	refused map[execution.Status]error
}

// moves covers every target a method can ask for. Only Requeue moves an
// execution to PENDING (a run paused while it waited for a slot).
var moves = []move{
	{"Pause", execution.Paused, (*execution.Execution).Pause, nil},
	// A PENDING run is started by the scheduler, in its turn, never by RESUME.
	{"Resume", execution.Running, (*execution.Execution).Resume, map[execution.Status]error{execution.Pending: execution.ErrQueued}},
	// The scheduler admits only a run that waits; a paused one is resumed.
	{"Admit", execution.Running, (*execution.Execution).Admit, map[execution.Status]error{execution.Paused: execution.ErrNotQueued}},
	{"Requeue", execution.Pending, (*execution.Execution).Requeue, nil},
	{"Complete", execution.Success, func(e *execution.Execution) error { return e.Complete(t1) }, nil},
	{"Fail", execution.Failure, func(e *execution.Execution) error { return e.Fail(t1, "boom") }, nil},
	{"Stop(CANCEL)", execution.Stopped, func(e *execution.Execution) error { _, err := e.Stop(execution.Cancel, t1); return err }, nil},
	{"Stop(KILL)", execution.Stopped, func(e *execution.Execution) error { _, err := e.Stop(execution.Kill, t1); return err }, nil},
}

func restoreExecution(t *testing.T, s execution.State) *execution.Execution {
	t.Helper()
	if s.ID == "" {
		s.ID = "e-1"
	}
	e, err := execution.Restore(s)
	if err != nil {
		t.Fatalf("Restore(%+v) error = %v, want nil", s, err)
	}
	return e
}

// TestExecutionTransitionTable drives every cell of the table (every status
// times every target a method can ask for) through the public methods.
func TestExecutionTransitionTable(t *testing.T) {
	t.Parallel()
	for _, from := range execution.Statuses {
		for _, m := range moves {
			t.Run(fmt.Sprintf("%s/%s", from, m.name), func(t *testing.T) {
				t.Parallel()
				e := restoreExecution(t, execution.State{Status: from, StartedAt: t0})
				err := m.do(e)
				got := e.Status()
				switch {
				case from.Terminal():
					if !errors.Is(err, execution.ErrFinished) || !errors.Is(err, fault.ErrConflict) {
						t.Fatalf("%s from %s: got error %v, want one matching ErrFinished and fault.ErrConflict", m.name, from, err)
					}
					if got != from || !e.State().EndedAt.IsZero() {
						t.Errorf("%s from %s: got status %s ended %v, want %s unchanged", m.name, from, got, e.State().EndedAt, from)
					}
				case m.refused[from] != nil:
					if !errors.Is(err, m.refused[from]) || !errors.Is(err, fault.ErrConflict) || got != from {
						t.Errorf("%s from %s: got (%s, %v), want (%s, an error matching %v)", m.name, from, got, err, from, m.refused[from])
					}
				case from == m.to:
					if err != nil || got != from {
						t.Errorf("%s from %s: got (%s, %v), want (%s, nil): a move to the same status is a no-op", m.name, from, got, err, from)
					}
				case slices.Contains(wantNext[from], m.to):
					if err != nil || got != m.to {
						t.Fatalf("%s from %s: got (%s, %v), want (%s, nil)", m.name, from, got, err, m.to)
					}
					if ended := e.State().EndedAt; m.to.Terminal() != !ended.IsZero() || m.to.Terminal() && !ended.Equal(t1) {
						t.Errorf("%s from %s: got endedAt %v, want %v only for a terminal status", m.name, from, ended, t1)
					}
				default:
					te, ok := errors.AsType[*execution.TransitionError](err)
					if !ok {
						t.Fatalf("%s from %s: got error %v, want a *TransitionError", m.name, from, err)
					}
					if !errors.Is(err, execution.ErrInvalidTransition) || !errors.Is(err, fault.ErrConflict) {
						t.Errorf("%s from %s: got %v, want it to match ErrInvalidTransition and fault.ErrConflict", m.name, from, err)
					}
					want := execution.TransitionError{What: "execution e-1", From: string(from), To: string(m.to)}
					if *te != want {
						t.Errorf("%s from %s: got %+v, want %+v", m.name, from, *te, want)
					}
					if got != from {
						t.Errorf("%s from %s: got status %s after a refusal, want %s", m.name, from, got, from)
					}
				}
			})
		}
	}
}

func TestTransitionErrorText(t *testing.T) {
	t.Parallel()
	e := restoreExecution(t, execution.State{Status: execution.Pending})
	err := e.Complete(t1)
	if got, want := fmt.Sprint(err), "execution e-1 is PENDING and cannot become SUCCESS"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestStatusValidTerminal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s               execution.Status
		valid, terminal bool
	}{
		{execution.Pending, true, false},
		{execution.Running, true, false},
		{execution.Paused, true, false},
		{execution.Success, true, true},
		{execution.Failure, true, true},
		{execution.Stopped, true, true},
		{"WAITING", false, false},
		{"running", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			t.Parallel()
			if got := tt.s.Valid(); got != tt.valid {
				t.Errorf("Status(%q).Valid() got %v, want %v", tt.s, got, tt.valid)
			}
			if got := tt.s.Terminal(); got != tt.terminal {
				t.Errorf("Status(%q).Terminal() got %v, want %v", tt.s, got, tt.terminal)
			}
		})
	}
}

func TestNodeStatusValidTerminal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s               execution.NodeStatus
		valid, terminal bool
	}{
		{execution.NodePending, true, false},
		{execution.NodeRunning, true, false},
		{execution.NodePaused, true, false},
		{execution.NodeWaiting, true, false},
		{execution.NodeSkipped, true, false}, // a skipped node may be unskipped; a settled one is not Live
		{execution.NodeSuccess, true, true},
		{execution.NodeFailure, true, true},
		{execution.NodeStopped, true, true},
		{"DONE", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.s), func(t *testing.T) {
			t.Parallel()
			if got := tt.s.Valid(); got != tt.valid {
				t.Errorf("NodeStatus(%q).Valid() got %v, want %v", tt.s, got, tt.valid)
			}
			if got := tt.s.Terminal(); got != tt.terminal {
				t.Errorf("NodeStatus(%q).Terminal() got %v, want %v", tt.s, got, tt.terminal)
			}
		})
	}
}

func TestStatusListsAreComplete(t *testing.T) {
	t.Parallel()
	if got, want := fmt.Sprint(execution.Statuses), "[PENDING RUNNING PAUSED SUCCESS FAILURE STOPPED]"; got != want {
		t.Errorf("Statuses got %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(execution.NodeStatuses), "[PENDING RUNNING PAUSED WAITING SKIPPED SUCCESS FAILURE STOPPED]"; got != want {
		t.Errorf("NodeStatuses got %s, want %s", got, want)
	}
	for _, s := range execution.NodeStatuses {
		if strings.ToUpper(string(s)) != string(s) {
			t.Errorf("node status %q: got mixed case, want upper case", s)
		}
	}
}

// TestExecutionDiagramMatchesTable keeps docs/state-machines.md honest: the
// edges of its execution diagram are exactly the moves the code allows.
func TestExecutionDiagramMatchesTable(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/state-machines.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	if i := strings.Index(section, "## Execution"); i >= 0 {
		section = section[i:]
	}
	start := strings.Index(section, "```mermaid\nstateDiagram-v2")
	if start < 0 {
		t.Fatal("docs/state-machines.md: got no execution stateDiagram-v2 block, want one under ## Execution")
	}
	block := section[start:]
	block = block[:strings.Index(block[3:], "```")+3]
	edge := regexp.MustCompile(`(?m)^\s*([A-Z]+)\s*-->\s*([A-Z]+)\s*(:|$)`)
	var drawn []string
	for _, m := range edge.FindAllStringSubmatch(block, -1) {
		if execution.Status(m[1]).Valid() && execution.Status(m[2]).Valid() {
			drawn = append(drawn, m[1]+"->"+m[2])
		}
	}
	var allowed []string
	all := append(slices.Clone(moves), move{"Complete while draining", execution.Stopped, func(e *execution.Execution) error {
		if _, err := e.Stop(execution.Drain, t0); err != nil {
			return err
		}
		return e.Complete(t1)
	}, nil})
	for _, from := range execution.Statuses {
		for _, m := range all {
			e := restoreExecution(t, execution.State{Status: from})
			if err := m.do(e); err == nil && e.Status() != from {
				allowed = append(allowed, string(from)+"->"+string(e.Status()))
			}
		}
	}
	slices.Sort(drawn)
	slices.Sort(allowed)
	allowed = slices.Compact(allowed)
	if !slices.Equal(drawn, allowed) {
		t.Errorf("execution diagram edges:\ngot  %v\nwant %v (what the code allows)", drawn, allowed)
	}
}
