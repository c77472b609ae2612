package execution_test

import (
	"slices"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// run is a waiting run of session s, workflow w, with the given bounds.
func run(id, s, w string, p execution.Pool, sessionMax, workflowMax int) execution.Candidate {
	return execution.Candidate{ID: id, SessionID: s, WorkflowID: w, Pool: p, SessionMax: sessionMax, WorkflowMax: workflowMax}
}

// held builds a tally from (session, workflow, pool, n) rows.
func held(rows ...any) execution.Tally {
	t := execution.NewTally()
	for i := 0; i+3 < len(rows); i += 4 {
		t.Add(rows[i].(string), rows[i+1].(string), rows[i+2].(execution.Pool), rows[i+3].(int))
	}
	return t
}

func TestAdmitKeepsStartOrderWithinEachBound(t *testing.T) {
	t.Parallel()
	normal, reserved := execution.PoolNormal, execution.PoolReserved
	tests := []struct {
		name  string
		slots execution.Slots
		held  execution.Tally
		queue []execution.Candidate
		max   int
		want  []string
	}{
		{"no bound admits everything", execution.Slots{}, held(),
			[]execution.Candidate{run("a", "s", "w", normal, 0, 0), run("b", "s", "w", normal, 0, 0)}, 0, []string{"a", "b"}},
		{"workflow bound of 2 with 1 running admits the oldest one", execution.Slots{}, held("s", "w", normal, 1),
			[]execution.Candidate{run("a", "s", "w", normal, 0, 2), run("b", "s", "w", normal, 0, 2)}, 0, []string{"a"}},
		{"a full workflow does not hold back another workflow", execution.Slots{}, held("s", "w", normal, 1),
			[]execution.Candidate{run("a", "s", "w", normal, 0, 1), run("b", "s", "v", normal, 0, 1)}, 0, []string{"b"}},
		{"session bound counts every workflow of the session", execution.Slots{}, held("s", "w", normal, 2),
			[]execution.Candidate{run("a", "s", "v", normal, 3, 0), run("b", "s", "u", normal, 3, 0), run("c", "t", "u", normal, 3, 0)}, 0, []string{"a", "c"}},
		{"server bound in start order", execution.Slots{MaxRunning: 3}, held("x", "y", normal, 1),
			[]execution.Candidate{run("a", "s", "w", normal, 0, 0), run("b", "t", "w", normal, 0, 0), run("c", "s", "w", normal, 0, 0)}, 0, []string{"a", "b"}},
		{"reserved runs are admitted while the normal pool is full, up to the reserved size", execution.Slots{MaxRunning: 2, Reserved: 2}, held("x", "y", normal, 2),
			[]execution.Candidate{run("n", "s", "w", normal, 0, 0), run("r1", "sup", "w", reserved, 0, 0), run("r2", "sup", "w", reserved, 0, 0), run("r3", "sup", "w", reserved, 0, 0)},
			0, []string{"r1", "r2"}},
		{"reserved runs do not take normal slots", execution.Slots{MaxRunning: 2, Reserved: 1}, held("sup", "w", reserved, 1),
			[]execution.Candidate{run("r", "sup", "w", reserved, 0, 0), run("n", "s", "w", normal, 0, 0)}, 0, []string{"n"}},
		{"without a reserved pool reserved runs share the normal pool", execution.Slots{MaxRunning: 2}, held("sup", "w", reserved, 1),
			[]execution.Candidate{run("r", "sup", "w", reserved, 0, 0), run("n", "s", "w", normal, 0, 0)}, 0, []string{"r"}},
		{"reserved runs obey their session's bound", execution.Slots{MaxRunning: 1, Reserved: 5}, held("sup", "w", reserved, 1),
			[]execution.Candidate{run("r", "sup", "w", reserved, 1, 0)}, 0, nil},
		{"no server bound means no pool waits", execution.Slots{Reserved: 1}, held("sup", "w", reserved, 3),
			[]execution.Candidate{run("r", "sup", "w", reserved, 0, 0)}, 0, []string{"r"}},
		{"max caps one pass", execution.Slots{}, held(),
			[]execution.Candidate{run("a", "s", "w", normal, 0, 0), run("b", "s", "w", normal, 0, 0)}, 1, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.slots.Admit(tt.held, tt.queue, tt.max); !slices.Equal(got, tt.want) {
				t.Errorf("Admit: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdmitUpdatesTheTally(t *testing.T) {
	t.Parallel()
	h := held()
	s := execution.Slots{MaxRunning: 2}
	got := s.Admit(h, []execution.Candidate{run("a", "s", "w", execution.PoolNormal, 0, 0)}, 0)
	if len(got) != 1 || h.Pools[execution.PoolNormal] != 1 || h.Sessions["s"] != 1 || h.Workflows[execution.WorkflowRef{SessionID: "s", WorkflowID: "w"}] != 1 {
		t.Errorf("got admitted %v and tally %+v, want one run counted in its pool, session and workflow", got, h)
	}
	if s.Full(h) {
		t.Error("Full with 1 of 2 slots held: got true, want false")
	}
	s.Admit(h, []execution.Candidate{run("b", "s", "w", execution.PoolNormal, 0, 0)}, 0)
	if !s.Full(h) {
		t.Error("Full with 2 of 2 slots held: got false, want true")
	}
}

func TestStartsNow(t *testing.T) {
	t.Parallel()
	normal, reserved := execution.PoolNormal, execution.PoolReserved
	tests := []struct {
		name          string
		slots         execution.Slots
		held, waiting execution.Tally
		c             execution.Candidate
		want          bool
	}{
		{"room and nobody waiting", execution.Slots{MaxRunning: 2}, held("s", "w", normal, 1), held(), run("c", "s", "w", normal, 0, 0), true},
		{"full", execution.Slots{MaxRunning: 1}, held("s", "w", normal, 1), held(), run("c", "s", "w", normal, 0, 0), false},
		{"room but an earlier run waits in the pool", execution.Slots{MaxRunning: 5}, held(), held("t", "v", normal, 1), run("c", "s", "w", normal, 0, 0), false},
		{"a waiting run of another workflow does not count without a server bound", execution.Slots{}, held(), held("s", "v", normal, 1), run("c", "s", "w", normal, 0, 1), true},
		{"a waiting run of the same session counts under a session bound", execution.Slots{}, held(), held("s", "v", normal, 1), run("c", "s", "w", normal, 3, 0), false},
		{"a waiting normal run does not hold back a reserved start", execution.Slots{MaxRunning: 1, Reserved: 1}, held("s", "w", normal, 1), held("s", "w", normal, 4), run("c", "sup", "w", reserved, 0, 0), true},
		{"a full reserved pool", execution.Slots{MaxRunning: 1, Reserved: 1}, held("sup", "w", reserved, 1), held(), run("c", "sup", "w", reserved, 0, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.slots.StartsNow(tt.held, tt.waiting, tt.c); got != tt.want {
				t.Errorf("StartsNow: got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLimitedAndValidate(t *testing.T) {
	t.Parallel()
	if (execution.Slots{}).Limited(run("c", "s", "w", execution.PoolNormal, 0, 0)) {
		t.Error("Limited with no bound anywhere: got true, want false")
	}
	if !(execution.Slots{}).Limited(run("c", "s", "w", execution.PoolNormal, 0, 4)) {
		t.Error("Limited with a workflow bound: got false, want true")
	}
	if err := (execution.Slots{MaxRunning: -1}).Validate(); err == nil {
		t.Error("Validate(-1): got nil, want an error")
	}
	if !execution.PoolReserved.Valid() || execution.Pool("gold").Valid() || execution.PoolNormal.String() != "normal" {
		t.Error("Pool: want normal and reserved valid, others not, the normal pool named normal")
	}
}

func TestNewPendingWaitsUntilAdmitted(t *testing.T) {
	t.Parallel()
	e := execution.NewPending("e-1", "s", "w", "", "", time.Unix(0, 0))
	if e.Status() != execution.Pending {
		t.Fatalf("NewPending: got %s, want PENDING", e.Status())
	}
	if err := e.Resume(); err == nil || e.Status() != execution.Pending {
		t.Fatalf("Resume of a waiting run: got (%s, %v), want it refused", e.Status(), err)
	}
	if err := e.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := e.Requeue(); err != nil || e.Status() != execution.Pending {
		t.Fatalf("Requeue of a run paused while waiting: got (%s, %v), want PENDING", e.Status(), err)
	}
	if err := e.Admit(); err != nil || e.Status() != execution.Running {
		t.Fatalf("Admit: got (%s, %v), want RUNNING", e.Status(), err)
	}
}
