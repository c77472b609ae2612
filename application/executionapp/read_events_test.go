package executionapp_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
)

// outbox is a Reader holding events by seq and session; only EventExists is
// used here.
type outbox struct {
	executionapp.Reader
	session map[int64]string
}

func (o outbox) EventExists(_ context.Context, seq int64, sessions []string) (bool, error) {
	sid, ok := o.session[seq]
	return ok && (sessions == nil || slices.Contains(sessions, sid)), nil
}

// TestResumePositionIsCheckedInTheCallersScope: a limited caller gets the
// same refusal, word for word, for the seq of another session's event as
// for a seq of no event; its own seqs and, for a caller of every session,
// any stored seq are accepted.
func TestResumePositionIsCheckedInTheCallersScope(t *testing.T) {
	t.Parallel()
	uc := executionapp.NewReadEvents(outbox{session: map[int64]string{7: "alpha", 8: "beta", 9: "alpha"}})
	ctx := context.Background()
	check := func(seq int64, sessions []string) error {
		return uc.CheckPosition(ctx, executionapp.EventQuery{SessionID: "alpha", Sessions: sessions, AfterSeq: seq})
	}
	limited := []string{"alpha"}
	for _, c := range []struct {
		name     string
		seq      int64
		sessions []string
	}{
		{"no header", 0, limited},
		{"own event", 7, limited},
		{"own later event", 9, limited},
		{"foreign event, caller of every session", 8, nil},
	} {
		if err := check(c.seq, c.sessions); err != nil {
			t.Errorf("%s (seq %d): got %v, want it accepted", c.name, c.seq, err)
		}
	}
	foreign, unknown := check(8, limited), check(10, limited)
	if !errors.Is(foreign, fault.ErrInvalid) || !errors.Is(unknown, fault.ErrInvalid) {
		t.Fatalf("foreign seq: %v; unknown seq: %v; want both refused as invalid", foreign, unknown)
	}
	if got, want := foreign.Error(), strings.ReplaceAll(unknown.Error(), "10", "8"); got != want {
		t.Errorf("foreign seq refused as %q, unknown seq as %q: want the same words", got, unknown)
	}
	if err := check(10, nil); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("seq of no event, caller of every session: got %v, want refused", err)
	}
	if err := check(-1, nil); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("negative seq: got %v, want refused", err)
	}
}
