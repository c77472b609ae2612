package supervisor

import (
	"fmt"
	"time"
)

// Loop bounds (issue 21, hole 7; docs/supervisors.md#loop-bounds). A run a
// supervisor causes is one causal step deeper than the event it reacted to:
// a run started by a person, a webhook or a schedule is depth 0, a run a
// directive starts or restarts in reaction to an event of a depth-d run is
// d + 1. A supervisor may cause runs down to MaxDepth; a directive (or a
// workflow supervisor's deciding run) that would go deeper is refused, so
// two supervisors feeding each other, or one restarting what it restarted,
// stop by themselves. Apart from that, each supervisor may send at most
// CommandsPerMinute directives in a budget window of BudgetWindow.
const (
	// DefaultLoopDepth is the deepest run a supervisor may cause unless
	// the server says otherwise (--supervisor-max-depth).
	DefaultLoopDepth = 5
	// MinLoopDepth and MaxLoopDepth bound --supervisor-max-depth: 1 lets
	// a supervisor react to what people start and nothing deeper.
	MinLoopDepth = 1
	MaxLoopDepth = 20
	// DefaultCommandsPerMinute is each supervisor's default budget
	// (--supervisor-commands-per-minute).
	DefaultCommandsPerMinute = 60
	// MinCommandsPerMinute and MaxCommandsPerMinute bound the budget.
	MinCommandsPerMinute = 1
	MaxCommandsPerMinute = 10_000
	// BudgetWindow is the length of a budget window: it opens at the
	// first directive after the last window ended.
	BudgetWindow = time.Minute
)

// Errors the loop bounds refuse with. Both match ErrDirectiveRefused.
var (
	ErrLoopTooDeep    = fmt.Errorf("supervisor: causal depth bound reached: %w", ErrDirectiveRefused)
	ErrBudgetExceeded = fmt.Errorf("supervisor: command budget spent: %w", ErrDirectiveRefused)
)

// The limits a SupervisorLimitReached event names.
const (
	LimitDepth  = "depth"
	LimitBudget = "budget"
)

// LoopBounds are the loop bounds a server applies to every supervisor.
type LoopBounds struct {
	// MaxDepth is the deepest run a supervisor may cause.
	MaxDepth int
	// CommandsPerMinute is each supervisor's budget per BudgetWindow.
	CommandsPerMinute int
}

// DefaultLoopBounds are the bounds without configuration.
func DefaultLoopBounds() LoopBounds {
	return LoopBounds{MaxDepth: DefaultLoopDepth, CommandsPerMinute: DefaultCommandsPerMinute}
}

// CreatesRuns reports whether a command of type t starts a run: only
// those are bounded by depth. Commands on runs that exist (pause, stop,
// answer, hold) count toward the budget only, so a supervisor can always
// stop a chain of runs however deep it is.
func CreatesRuns(t CommandType) bool {
	switch t {
	case StartWorkflow, RestartWorkflow, RestartFromNode, RetryNode:
		return true
	}
	return false
}
