package supervisor

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

func TestEnginesMatchSeedTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ      string
		category Category
		signals  []string
		all      bool
	}{
		{"rules", Rules, []string{"Event", "Tick", "Review", "Delegated"}, true},
		{"http", ExternalSystem, []string{"Event", "Review", "Started", "Delegated", "Consulted"}, true},
		{"workflow", OnThisServer, []string{"Event", "Tick", "Review", "Delegated", "Started"}, false},
		// Review beyond the seed's table: a process answers reviews with
		// its verdict lines (docs/supervisors.md, choices).
		{"process", OnThisServer, []string{"Event", "Review", "Started", "Delegated", "Consulted"}, true},
	}
	es := Engines()
	if len(es) != len(tests) {
		t.Fatalf("got %d engines, want %d", len(es), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			e := es[i]
			if e.Type != tt.typ || e.Category != tt.category || !slices.Equal(e.Signals, tt.signals) || !e.CanInitiate {
				t.Errorf("got %+v, want type %s category %s signals %v", e, tt.typ, tt.category, tt.signals)
			}
			if tt.all && !slices.Equal(e.DefaultCommands, Commands) {
				t.Errorf("default commands = %v, want every command", e.DefaultCommands)
			}
			if !tt.all && len(e.DefaultCommands) != 0 {
				t.Errorf("default commands = %v, want none", e.DefaultCommands)
			}
			if !json.Valid([]byte(e.Example)) {
				t.Errorf("example is not JSON: %s", e.Example)
			}
		})
	}
}

func TestEngineByTypeUnknown(t *testing.T) {
	t.Parallel()
	_, err := EngineByType("nope")
	if !errors.Is(err, ErrEngineNotFound) || !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("got %v, want ErrEngineNotFound", err)
	}
	if got, want := err.Error(), `supervisor engine "nope" does not exist; the engines are rules, http, workflow, process`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPresets(t *testing.T) {
	t.Parallel()
	ps, err := Presets("rules")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if !json.Valid([]byte(p.Document)) {
			t.Errorf("preset %s is not JSON", p.Name)
		}
	}
	if want := []string{"failure-guard", "approval-gate", "stall-watchdog", "too-many-running"}; !slices.Equal(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
	if ps, _ := Presets("http"); len(ps) != 0 || ps == nil {
		t.Errorf("http presets = %#v, want empty non-nil", ps)
	}
	if _, err := Presets("x"); !errors.Is(err, ErrEngineNotFound) {
		t.Errorf("got %v, want ErrEngineNotFound", err)
	}
}

func TestEnginesAreCopies(t *testing.T) {
	t.Parallel()
	es := Engines()
	es[0].Signals[0] = "changed"
	if Engines()[0].Signals[0] != "Event" {
		t.Error("Engines returned shared slices")
	}
}
