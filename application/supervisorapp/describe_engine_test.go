package supervisorapp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestDescribeEveryEngine: each engine's example is a whole supervisor
// document the parser accepts, its guide names every setting, and the
// conditions list the variables of their places.
func TestDescribeEveryEngine(t *testing.T) {
	t.Parallel()
	uc := supervisorapp.NewDescribeEngine()
	for _, e := range supervisor.Engines() {
		d, err := uc.Handle(t.Context(), e.Type)
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		doc, err := d.Example.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := supervisor.Parse(doc, supervisor.ParseOptions{Check: checker(t)}); err != nil {
			t.Errorf("%s: the example %s does not parse: %v", e.Type, doc, err)
		}
		for _, s := range e.Settings {
			if !strings.Contains(d.Usage, "`"+s.Name+"`") {
				t.Errorf("%s: the guide does not name the setting %s:\n%s", e.Type, s.Name, d.Usage)
			}
		}
		if !strings.Contains(d.Usage, "PUT /api/supervisors/example-"+e.Type) {
			t.Errorf("%s: the guide does not say where to send the example:\n%s", e.Type, d.Usage)
		}
		wantConditions := map[string]int{"rules": 3, "workflow": 1}[e.Type]
		if len(d.Conditions) != wantConditions {
			t.Errorf("%s: %d condition places, want %d", e.Type, len(d.Conditions), wantConditions)
		}
		if e.Type == "rules" && (len(d.PresetList) != 4 || d.Conditions[2].Variables[0].Name != "command") {
			t.Errorf("rules: presets %d, review variables %v", len(d.PresetList), d.Conditions[2].Variables)
		}
	}
	if _, err := uc.Handle(t.Context(), "cron"); !errors.Is(err, supervisor.ErrEngineNotFound) {
		t.Fatalf("unknown engine: got %v, want ErrEngineNotFound", err)
	}
}
