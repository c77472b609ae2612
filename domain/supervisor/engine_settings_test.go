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
	// Bounded lengths (process): the catalogue's text names the bound, the
	// validator holds the constant, Parse takes the bound and refuses one
	// past it, and the engine's typed reader reads what was saved.
	ps := func(s Supervisor) (ProcessSettings, error) { return s.ProcessSettings() }
	lengths := []struct {
		engine, name string
		max          int
		value        func(n int) string
		typed        func(Supervisor) (int, error)
	}{
		{"process", "command", ProcessMaxCommandLen, func(n int) string { return "/" + strings.Repeat("d", n-1) },
			func(s Supervisor) (int, error) { c, err := ps(s); return len(c.Command), err }},
		{"process", "args", ProcessMaxArgsLen, func(n int) string { return strings.Repeat("a", n) },
			func(s Supervisor) (int, error) { c, err := ps(s); return len(strings.Join(c.Args, "\n")), err }},
	}
	base["process"] = map[string]any{"command": "/opt/yukta/decide"}
	for _, l := range lengths {
		where := l.engine + "." + l.name
		e, err := EngineByType(l.engine)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range e.Settings {
			if s.Name == l.name && !strings.Contains(s.Description, strconv.Itoa(l.max)) {
				t.Errorf("%s: the catalogue's text %q does not name the bound %d", where, s.Description, l.max)
			}
		}
		if c := settingChecks[where]; c.maxLen != l.max {
			t.Errorf("%s: the validator's bound %d is not the constant %d", where, c.maxLen, l.max)
		}
		sup, err := parse(l.engine, map[string]any{l.name: l.value(l.max)})
		if err != nil {
			t.Errorf("%s at its bound %d: %v", where, l.max, err)
		} else if n, err := l.typed(sup); err != nil || n != l.max {
			t.Errorf("%s at its bound %d: the engine reads %d, %v", where, l.max, n, err)
		}
		if _, err := parse(l.engine, map[string]any{l.name: l.value(l.max + 1)}); err == nil || !strings.Contains(err.Error(), "engine.settings."+l.name) {
			t.Errorf("%s one past its bound: %v; want a refusal at engine.settings.%s", where, err, l.name)
		}
		// A stored document past the bound (saved before it) is refused by
		// the typed reader too, naming the setting.
		old := Restore(Spec{ID: "old", Name: "Old", EngineType: l.engine, Enabled: true,
			Settings: map[string]any{"command": "/opt/yukta/decide", l.name: l.value(l.max + 1)}})
		if _, err := l.typed(old); err == nil || !strings.Contains(err.Error(), "engine.settings."+l.name) {
			t.Errorf("%s stored past its bound: the engine reads it (%v); want a refusal naming engine.settings.%s", where, err, l.name)
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
