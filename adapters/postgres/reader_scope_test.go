package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/executionapp"
)

// scopeEvents writes events of the sessions "mine" and "theirs",
// interleaved in one outbox, and returns their seqs by session in commit
// order, once every one is readable.
func scopeEvents(t *testing.T, pool *pgxpool.Pool, r *postgres.Reader) map[string][]int64 {
	t.Helper()
	tx := postgres.NewExecutionTransactor(pool)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 6 {
		sid := []string{"mine", "theirs"}[i%2]
		err := tx.WithinTx(context.Background(), func(ctx context.Context, s executionapp.Stores) error {
			return s.Events.Append(ctx, []executionapp.Event{{Type: "SessionApplied", At: at.Add(time.Duration(i) * time.Second),
				SessionID: sid, Actor: "test", Channel: "rest", Data: map[string]any{"i": i}}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Other tests share the cluster; their open transactions hold the
	// outbox horizon back for a moment.
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := r.Events(context.Background(), executionapp.EventQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 6 {
			out := map[string][]int64{}
			for _, e := range evs {
				out[e.SessionID] = append(out[e.SessionID], e.Seq)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 6 events readable after 30 s", len(evs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func seqs(evs []executionapp.StoredEvent) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// TestEventPositionsStayInScope: a resume position is looked up among the
// caller's sessions only, so the seq of another session's event behaves
// exactly like a seq of no event, for EventExists and for Events.
func TestEventPositionsStayInScope(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	r := postgres.NewReader(pool)
	ctx := context.Background()
	by := scopeEvents(t, pool, r)
	mine, theirs := by["mine"], by["theirs"]
	if len(mine) != 3 || len(theirs) != 3 {
		t.Fatalf("events by session: %v", by)
	}
	none := slices.Max(append(slices.Clone(mine), theirs...)) + 1000
	only := []string{"mine"}

	for _, c := range []struct {
		name     string
		seq      int64
		sessions []string
		want     bool
	}{
		{"own event, limited", mine[1], only, true},
		{"foreign event, limited", theirs[1], only, false},
		{"no event, limited", none, only, false},
		{"foreign event, every session", theirs[1], nil, true},
		{"no event, every session", none, nil, false},
	} {
		got, err := r.EventExists(ctx, c.seq, c.sessions)
		if err != nil || got != c.want {
			t.Errorf("EventExists(%s, seq %d): got %v, %v; want %v", c.name, c.seq, got, err, c.want)
		}
	}

	read := func(after int64) []int64 {
		t.Helper()
		evs, err := r.Events(ctx, executionapp.EventQuery{Sessions: only, AfterSeq: after, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return seqs(evs)
	}
	if got := read(mine[0]); !slices.Equal(got, mine[1:]) {
		t.Errorf("resume after own event %d: got %v, want %v", mine[0], got, mine[1:])
	}
	// A foreign seq gives no position: the stream reads from the start, as
	// for a seq of no event, never from the foreign event's place.
	fromForeign, fromNone := read(theirs[1]), read(none)
	if !slices.Equal(fromForeign, mine) || !slices.Equal(fromNone, mine) {
		t.Errorf("resume after a foreign seq: %v; after no event: %v; want both %v", fromForeign, fromNone, mine)
	}
}

// TestInputsFilterBeforeTheCap: the list of a session-limited caller is
// filtered in the query, so another session's thousand inputs neither hide
// the caller's nor show in how many it gets.
func TestInputsFilterBeforeTheCap(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	exec := map[string]string{"theirs": "0193c000-0000-7000-8000-000000000001", "mine": "0193c000-0000-7000-8000-000000000002"}
	for _, sid := range []string{"theirs", "mine"} {
		if _, err := pool.Exec(ctx, `INSERT INTO sessions (session_id, name, created_at, updated_at) VALUES ($1, $1, $2, $2)`, sid, at); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO executions (execution_id, session_id, workflow_id, status, definition, actor, channel, started_at)
			VALUES ($1, $2, 'w', 'RUNNING', '{}', 'test', 'rest', $3)`, exec[sid], sid, at); err != nil {
			t.Fatal(err)
		}
	}
	// The foreign inputs are older, so a cap before the filter would keep
	// only them.
	if _, err := pool.Exec(ctx, `INSERT INTO inputs (input_id, session_id, execution_id, node_id, item_id, prompt, status, created_at)
		SELECT gen_random_uuid(), 'theirs', $1, 'ask', i, 'p', 'open', $2::timestamptz + i * interval '1 ms'
		  FROM generate_series(1, 1000) AS i`, exec["theirs"], at); err != nil {
		t.Fatal(err)
	}
	own := "0193c000-0000-7000-8000-0000000000aa"
	if _, err := pool.Exec(ctx, `INSERT INTO inputs (input_id, session_id, execution_id, node_id, item_id, prompt, status, created_at)
		VALUES ($1, 'mine', $2, 'ask', 1, 'p', 'open', $3)`, own, exec["mine"], at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	r := postgres.NewReader(pool)
	got, err := r.Inputs(ctx, executionapp.InputQuery{Sessions: []string{"mine"}, OnlyOpen: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != own {
		t.Fatalf("inputs of a caller limited to mine: got %d (%v), want its one input %s", len(got), ids(got), own)
	}
	all, err := r.Inputs(ctx, executionapp.InputQuery{OnlyOpen: true})
	if err != nil || len(all) != executionapp.MaxInputPage {
		t.Fatalf("inputs of every session: got %d, %v; want the cap of %d", len(all), err, executionapp.MaxInputPage)
	}
	// A page after the 500th input goes on from the 501st.
	last := all[len(all)-1]
	next, err := r.Inputs(ctx, executionapp.InputQuery{OnlyOpen: true, Limit: 10, AfterAt: last.CreatedAt, AfterID: last.ID})
	if err != nil || len(next) != 10 || !next[0].CreatedAt.After(last.CreatedAt) || next[0].CreatedAt.Sub(last.CreatedAt) != time.Millisecond {
		t.Fatalf("the page after the 500th input: %d inputs, %v", len(next), err)
	}
}

func ids(ins []executionapp.Input) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.ID
	}
	return out
}

// TestInputNotFoundIsOneText: the store's answer for an unknown input is
// byte for byte the use case's answer for an input the caller may not see.
func TestInputNotFoundIsOneText(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	tx := postgres.NewExecutionTransactor(pool)
	for _, id := range []string{"0193c000-0000-7000-8000-0000000000ff", "not-a-uuid"} {
		err := tx.WithinTx(context.Background(), func(ctx context.Context, s executionapp.Stores) error {
			_, err := s.Inputs.Lock(ctx, id)
			return err
		})
		want := executionapp.InputNotFound(id)
		if !errors.Is(err, executionapp.ErrInputNotFound) || fmt.Sprint(err) != want.Error() {
			t.Errorf("Lock(%q): got %v, want %q", id, err, want)
		}
	}
}
