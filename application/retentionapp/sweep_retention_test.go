package retentionapp_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/retentionapp"
	"github.com/yukta/yukta/domain/retention"
)

// memStore is an in-memory Store: finished runs by session.
type memStore struct {
	led     bool
	runs    map[string][]retentionapp.Run
	deleted []string
	batches int
	policy  []retention.Policy
}

func (m *memStore) Lead(ctx context.Context, fn func(context.Context) error) (bool, error) {
	if m.led {
		return false, nil
	}
	return true, fn(ctx)
}

func (m *memStore) Sessions(context.Context) ([]retentionapp.SessionRetention, error) {
	seven := 7
	o, _ := retention.NewOverride(&seven, "delete")
	zero := 0
	forever, _ := retention.NewOverride(&zero, "")
	return []retentionapp.SessionRetention{{SessionID: "a"}, {SessionID: "b", Override: o}, {SessionID: "keep", Override: forever}}, nil
}

func (m *memStore) Due(_ context.Context, sid string, cutoff time.Time, limit int) ([]retentionapp.Run, error) {
	var out []retentionapp.Run
	for _, r := range m.runs[sid] {
		if r.EndedAt.Before(cutoff) && !slices.Contains(m.deleted, r.ID) && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *memStore) Delete(_ context.Context, runs []retentionapp.Run, d retentionapp.Deletion) ([]string, error) {
	m.batches++
	m.policy = append(m.policy, d.Policy)
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	m.deleted = append(m.deleted, ids...)
	return ids, nil
}

func (m *memStore) ExpireTombstones(context.Context, time.Time, int) (int, error) { return 0, nil }

type exporter struct{ fail string }

func (e exporter) Handle(_ context.Context, _, id string) ([][]byte, error) {
	if id == e.fail {
		return nil, errors.New("disk full")
	}
	return [][]byte{[]byte(`{"sequence":1}`)}, nil
}

type archive map[string]int

func (a archive) Write(_, id string, lines [][]byte) (string, error) {
	a[id] = len(lines)
	return id, nil
}

func TestSweepBatchesPerSessionPolicy(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	st := &memStore{runs: map[string][]retentionapp.Run{}}
	for i := range 25 {
		for _, sid := range []string{"a", "b", "keep"} {
			// a: 20 days old (kept under the server's 30), b: 10 days (due
			// under its own 7), keep: 400 days (kept forever).
			age := map[string]int{"a": 20, "b": 10, "keep": 400}[sid]
			st.runs[sid] = append(st.runs[sid], retentionapp.Run{ID: fmt.Sprintf("%s-%02d", sid, i), SessionID: sid, EndedAt: now.AddDate(0, 0, -age)})
		}
	}
	global, _ := retention.NewPolicy(30, "keep")
	arch := archive{}
	uc := retentionapp.NewSweepRetention(retentionapp.Deps{Store: st, Exporter: exporter{fail: "b-03"}, Archive: arch, Now: func() time.Time { return now }},
		retentionapp.Config{Policy: global, Batch: 10})
	rep, err := uc.Handle(context.Background())
	if err == nil || !strings.Contains(err.Error(), "b-03") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("a failed export must be reported: %v", err)
	}
	if rep.Deleted != 24 || rep.Exported != 24 || rep.Skipped != 1 || slices.Contains(st.deleted, "b-03") {
		t.Fatalf("report %+v, deleted %v; want b's 24 exported runs deleted and b-03 kept", rep, st.deleted)
	}
	for _, id := range st.deleted {
		if !strings.HasPrefix(id, "b-") || arch[id] != 1 {
			t.Fatalf("deleted %s (exported %d lines); only session b's runs are due, each exported first", id, arch[id])
		}
	}
	if st.batches != 3 || st.policy[0].Days() != 7 || st.policy[0].Journals() != retention.Delete {
		t.Fatalf("%d batches with policy %+v; want 3 of at most 10 under b's own 7/delete", st.batches, st.policy)
	}
	st.led = true
	if rep, err := uc.Handle(context.Background()); err != nil || rep.Led || rep.Deleted != 0 {
		t.Fatalf("another instance leads: %+v, %v; want nothing done", rep, err)
	}
}
