package execution

import (
	"fmt"
	"slices"
)

// Scheduler limits (docs/adr/0007-scheduler-admission.md). A run holds a
// slot from the moment it is admitted (it becomes RUNNING) until it ends; a
// PAUSE does not give the slot back, so a RESUME never has to wait for one.
// A start over a limit waits as PENDING, and the scheduler admits the
// waiting runs in start order as slots free. Three kinds of bound apply to a
// run, every one of them must have room:
//
//   - the server's: MaxRunning runs of the normal pool, and Reserved runs of
//     the reserved pool (supervisor runs) beside them;
//   - its session's maxRunning;
//   - its workflow's maxRunning.
//
// Zero means no bound. The functions here decide; the application counts,
// locks and records.

// Pool is the slot pool a run asks for.
type Pool string

// The pools.
const (
	// PoolNormal is every run that is not a supervisor's. MaxRunning
	// bounds it.
	PoolNormal Pool = ""
	// PoolReserved is for the runs of workflow supervisors, so they can
	// decide even while the server is full. Reserved bounds it, beside
	// MaxRunning; when Reserved is 0 its runs count in the normal pool.
	PoolReserved Pool = "reserved"
)

// Valid reports whether p is a known pool.
func (p Pool) Valid() bool { return p == PoolNormal || p == PoolReserved }

// String names the pool: "normal" or "reserved".
func (p Pool) String() string {
	if p == PoolNormal {
		return "normal"
	}
	return string(p)
}

// MaxRunningLimit is the largest value a maxRunning (of the server, a
// session or a workflow) may take.
const MaxRunningLimit = 1_000_000

// Slots are the server's bounds.
type Slots struct {
	// MaxRunning bounds the runs of the normal pool holding a slot; 0 means
	// no bound (and then no run waits for the server, reserved or not).
	MaxRunning int
	// Reserved bounds the runs of the reserved pool, beside MaxRunning.
	Reserved int
}

// Validate reports bounds out of range.
func (s Slots) Validate() error {
	if s.MaxRunning < 0 || s.MaxRunning > MaxRunningLimit {
		return fmt.Errorf("execution: maxRunning %d is out of range 0 to %d", s.MaxRunning, MaxRunningLimit)
	}
	if s.Reserved < 0 || s.Reserved > MaxRunningLimit {
		return fmt.Errorf("execution: reserved slots %d is out of range 0 to %d", s.Reserved, MaxRunningLimit)
	}
	return nil
}

// WorkflowRef names one workflow of a session.
type WorkflowRef struct {
	SessionID, WorkflowID string
}

// Candidate is a run that waits for a slot, or a start that asks for one,
// with the bounds of its session and workflow as they are now.
type Candidate struct {
	ID                    string
	SessionID, WorkflowID string
	Pool                  Pool
	// SessionMax and WorkflowMax are the maxRunning of the run's session
	// and workflow; 0 means no bound.
	SessionMax, WorkflowMax int
}

// Limited reports whether any bound applies to c under s: a start that no
// bound applies to starts at once, without counting anything.
func (s Slots) Limited(c Candidate) bool {
	return s.MaxRunning > 0 || c.SessionMax > 0 || c.WorkflowMax > 0
}

// Tally counts runs per pool (as they asked), session and workflow: the runs
// holding a slot, or the runs waiting.
type Tally struct {
	Pools     map[Pool]int
	Sessions  map[string]int
	Workflows map[WorkflowRef]int
}

// NewTally returns an empty tally.
func NewTally() Tally {
	return Tally{Pools: map[Pool]int{}, Sessions: map[string]int{}, Workflows: map[WorkflowRef]int{}}
}

// Add counts n runs of one workflow and pool.
func (t Tally) Add(sessionID, workflowID string, p Pool, n int) {
	t.Pools[p] += n
	t.Sessions[sessionID] += n
	t.Workflows[WorkflowRef{sessionID, workflowID}] += n
}

// pool is the pool a run of pool p counts in: the reserved pool only while
// one is configured.
func (s Slots) pool(p Pool) Pool {
	if p == PoolReserved && s.Reserved > 0 {
		return PoolReserved
	}
	return PoolNormal
}

// inPool counts the runs of t that count in pool p under s.
func (s Slots) inPool(t Tally, p Pool) int {
	if p == PoolReserved {
		return t.Pools[PoolReserved]
	}
	n := t.Pools[PoolNormal]
	if s.Reserved == 0 {
		n += t.Pools[PoolReserved]
	}
	return n
}

// bound is the server's bound of pool p; 0 is none.
func (s Slots) bound(p Pool) int {
	if s.MaxRunning == 0 {
		return 0 // no server limit: neither pool waits
	}
	if p == PoolReserved {
		return s.Reserved
	}
	return s.MaxRunning
}

// Fits reports whether c may take a slot with held runs holding one: every
// bound that applies to it has room.
func (s Slots) Fits(held Tally, c Candidate) bool {
	p := s.pool(c.Pool)
	if b := s.bound(p); b > 0 && s.inPool(held, p) >= b {
		return false
	}
	if c.SessionMax > 0 && held.Sessions[c.SessionID] >= c.SessionMax {
		return false
	}
	if c.WorkflowMax > 0 && held.Workflows[WorkflowRef{c.SessionID, c.WorkflowID}] >= c.WorkflowMax {
		return false
	}
	return true
}

// StartsNow reports whether a new start c runs at once rather than waiting:
// it fits, and no run already waits under any bound that applies to c (that
// run is ahead of it). held counts the runs holding a slot, waiting the runs
// waiting, both as the start sees them under the admission lock. When it is
// false the start waits, and the next admission pass decides (it may admit
// c at once when the runs ahead of it wait for another bound).
func (s Slots) StartsNow(held, waiting Tally, c Candidate) bool {
	if !s.Fits(held, c) {
		return false
	}
	p := s.pool(c.Pool)
	switch {
	case s.bound(p) > 0 && s.inPool(waiting, p) > 0:
		return false
	case c.SessionMax > 0 && waiting.Sessions[c.SessionID] > 0:
		return false
	case c.WorkflowMax > 0 && waiting.Workflows[WorkflowRef{c.SessionID, c.WorkflowID}] > 0:
		return false
	}
	return true
}

// Admit walks the waiting runs in start order and returns the ids of those
// that start now, in that order; held counts the runs holding a slot and is
// updated with the admitted ones. A run is admitted when every bound that
// applies to it has room; one that does not fit is passed over, so a run
// held back by its own workflow's bound does not hold back the runs of
// other workflows, and no run is admitted while an earlier one that fits
// the same room waits. At most max runs are admitted (0: no cap).
func (s Slots) Admit(held Tally, queue []Candidate, max int) []string {
	var out []string
	for _, c := range queue {
		if max > 0 && len(out) == max {
			break
		}
		if !s.Fits(held, c) {
			continue
		}
		held.Add(c.SessionID, c.WorkflowID, c.Pool, 1)
		out = append(out, c.ID)
	}
	return out
}

// Full reports whether the server's bounds leave no room in any pool, so
// nothing waiting can be admitted and a pass can stop reading the queue.
func (s Slots) Full(held Tally) bool {
	if s.MaxRunning == 0 {
		return false
	}
	pools := []Pool{PoolNormal}
	if s.Reserved > 0 {
		pools = append(pools, PoolReserved)
	}
	return !slices.ContainsFunc(pools, func(p Pool) bool { return s.inPool(held, p) < s.bound(p) })
}
