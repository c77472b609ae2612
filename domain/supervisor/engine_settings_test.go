package supervisor

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEngineSettingBoundsAreDeclaredOnce ties the catalogue's text, the
// validator and the engines' typed settings to the same constants: each
// bounded setting's catalogue Default is its default constant and its
// Description names its upper bound; Parse accepts the bounds and refuses
// one past them; the typed reader gives the default when the setting is
// left out, and every read (MarshalJSON) shows that default explicitly.
func TestEngineSettingBoundsAreDeclaredOnce(t *testing.T) {
	t.Parallel()
	type bound struct {
		engine, name string
		lo, hi, def  int // hi 0: the bound is the server's slot pool
		typed        func(Supervisor) (int, error)
	}
	wf := func(s Supervisor) (WorkflowSettings, error) { return s.WorkflowSettings() }
	hs := func(s Supervisor) (HTTPSettings, error) { return s.HTTPSettings() }
	bounds := []bound{
		{"workflow", "maxConcurrent", WorkflowMinMaxConcurrent, 0, WorkflowDefaultMaxConcurrent,
			func(s Supervisor) (int, error) { c, err := wf(s); return c.MaxConcurrent, err }},
		{"workflow", "timeout", WorkflowMinTimeoutSeconds, WorkflowMaxTimeoutSeconds, WorkflowDefaultTimeoutSeconds,
			func(s Supervisor) (int, error) { c, err := wf(s); return int(c.Timeout / time.Second), err }},
		{"http", "timeoutMs", HTTPMinTimeoutMs, HTTPMaxTimeoutMs, HTTPDefaultTimeoutMs,
			func(s Supervisor) (int, error) { c, err := hs(s); return int(c.Timeout / time.Millisecond), err }},
		{"http", "maxConcurrent", HTTPMinMaxConcurrent, HTTPMaxMaxConcurrent, HTTPDefaultMaxConcurrent,
			func(s Supervisor) (int, error) { c, err := hs(s); return c.MaxConcurrent, err }},
		{"rules", "schemaVersion", RuleSchemaVersion, RuleSchemaVersion, RuleSchemaVersion, nil},
	}
	base := map[string]map[string]any{
		"workflow": {"sessionId": "supervisors", "workflowId": "triage", "events": []any{"InputRequested"}},
		"http":     {},
		"rules": {"rules": []any{map[string]any{"id": "r", "when": map[string]any{"event": "NodeStatusChanged"},
			"then": map[string]any{"command": "PauseWorkflow"}}}},
	}
	parse := func(engine string, extra map[string]any) (Supervisor, error) {
		settings := map[string]any{}
		for k, v := range base[engine] {
			settings[k] = v
		}
		for k, v := range extra {
			settings[k] = v
		}
		b, _ := json.Marshal(map[string]any{"id": "s", "name": "S", "owns": []any{"session:ci"},
			"engine": map[string]any{"type": engine, "settings": settings}})
		return Parse(b, ParseOptions{})
	}
	for _, b := range bounds {
		where := b.engine + "." + b.name
		e, err := EngineByType(b.engine)
		if err != nil {
			t.Fatal(err)
		}
		var st Setting
		for _, s := range e.Settings {
			if s.Name == b.name {
				st = s
			}
		}
		if st.Default != strconv.Itoa(b.def) {
			t.Errorf("%s: the catalogue's default %q is not the constant %d", where, st.Default, b.def)
		}
		if b.hi != 0 && !strings.Contains(st.Description, strconv.Itoa(b.hi)) {
			t.Errorf("%s: the catalogue's text %q does not name the bound %d", where, st.Description, b.hi)
		}
		if c := settingChecks[where]; b.engine != "rules" && (c.min != int64(b.lo) || c.max != int64(b.hi)) {
			t.Errorf("%s: the validator's bounds %d..%d are not the constants %d..%d", where, c.min, c.max, b.lo, b.hi)
		}
		// Left out: the default, shown on every read.
		sup, err := parse(b.engine, nil)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		doc, _ := json.Marshal(sup)
		if !strings.Contains(string(doc), fmt.Sprintf(`"%s":%d`, b.name, b.def)) {
			t.Errorf("%s: the read %s does not show the default %d", where, doc, b.def)
		}
		if b.typed != nil {
			if n, err := b.typed(sup); err != nil || n != b.def {
				t.Errorf("%s: the engine reads %d, %v; want the default %d", where, n, err, b.def)
			}
		}
		// At the bounds: accepted, and read as given.
		for _, n := range []int{b.lo, max(b.hi, b.lo)} {
			sup, err := parse(b.engine, map[string]any{b.name: n})
			if err != nil {
				t.Errorf("%s = %d: %v", where, n, err)
				continue
			}
			if b.typed != nil {
				if got, err := b.typed(sup); err != nil || got != n {
					t.Errorf("%s = %d: the engine reads %d, %v", where, n, got, err)
				}
			}
		}
		// One past: refused, at the setting's path.
		past := []int{b.lo - 1}
		if b.hi != 0 {
			past = append(past, b.hi+1)
		}
		for _, n := range past {
			if _, err := parse(b.engine, map[string]any{b.name: n}); err == nil || !strings.Contains(err.Error(), "engine.settings."+b.name) {
				t.Errorf("%s = %d: %v; want a refusal at engine.settings.%s", where, n, err, b.name)
			}
		}
	}
	// A stored supervisor without the defaults (saved before they were
	// stored) reads with them.
	old := Restore(Spec{ID: "old", Name: "Old", EngineType: "workflow", Settings: base["workflow"], Enabled: true})
	if old.Settings()["maxConcurrent"] != json.Number(strconv.Itoa(WorkflowDefaultMaxConcurrent)) ||
		old.Settings()["timeout"] != json.Number(strconv.Itoa(WorkflowDefaultTimeoutSeconds)) {
		t.Errorf("a restored supervisor reads %v, without its defaults", old.Settings())
	}
}
