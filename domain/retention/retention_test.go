package retention_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/retention"
)

func TestNewPolicy(t *testing.T) {
	p, err := retention.NewPolicy(0, "")
	if err != nil || p.Deletes() || p.Journals() != retention.Keep {
		t.Fatalf("default policy = %+v, %v; want keep forever, journals kept", p, err)
	}
	p, err = retention.NewPolicy(30, "delete")
	if err != nil || !p.Deletes() || p.Days() != 30 || p.Journals() != retention.Delete {
		t.Fatalf("30/delete = %+v, %v", p, err)
	}
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	if got, want := p.Cutoff(now), time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("cutoff = %v, want %v", got, want)
	}
	for _, c := range []struct {
		days     int
		journals string
		want     []string
	}{
		{-1, "keep", []string{"days: is -1"}},
		{retention.MaxDays + 1, "", []string{"days: is 36501"}},
		{7, "archive", []string{`journals: is "archive"; use keep`}},
		{-5, "KEEP", []string{"days: is -5", `journals: is "KEEP"`}},
	} {
		_, err := retention.NewPolicy(c.days, c.journals)
		var ve *fault.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("NewPolicy(%d, %q) = %v; want a validation error", c.days, c.journals, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("NewPolicy(%d, %q) = %q; want it to say %q", c.days, c.journals, err, w)
			}
		}
	}
}

func TestOverride(t *testing.T) {
	global, _ := retention.NewPolicy(90, "keep")
	if p := (retention.Override{}).Over(global); p != global {
		t.Fatalf("zero override changed the policy: %+v", p)
	}
	seven := 7
	o, err := retention.NewOverride(&seven, "")
	if err != nil {
		t.Fatal(err)
	}
	if p := o.Over(global); p.Days() != 7 || p.Journals() != retention.Keep {
		t.Fatalf("days-only override = %+v", p)
	}
	zero := 0
	o, _ = retention.NewOverride(&zero, "delete")
	if p := o.Over(global); p.Deletes() || p.Journals() != retention.Delete {
		t.Fatalf("keep-forever override = %+v; a session's days 0 must win over the server's 90", p)
	}
	if d, set := o.Days(); d != 0 || !set || o.IsZero() {
		t.Fatalf("override days = %d, %v", d, set)
	}
	o, _ = retention.NewOverride(nil, "delete")
	if p := o.Over(global); p.Days() != 90 || p.Journals() != retention.Delete {
		t.Fatalf("journals-only override = %+v", p)
	}
	bad := -3
	if _, err := retention.NewOverride(&bad, "nope"); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "days: is -3") {
		t.Fatalf("bad override = %v", err)
	}
}
