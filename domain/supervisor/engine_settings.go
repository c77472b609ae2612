package supervisor

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// The defaults and bounds of engine settings (seed 000), declared once:
// the catalogue's text (Setting.Default and Description), the validator
// (settingChecks) and the engines (WorkflowSettings, HTTPSettings) read
// them from here.
const (
	// workflow
	WorkflowDefaultMaxConcurrent  = 2
	WorkflowMinMaxConcurrent      = 1
	WorkflowDefaultTimeoutSeconds = 60
	WorkflowMinTimeoutSeconds     = 1
	WorkflowMaxTimeoutSeconds     = 600
	// http
	HTTPDefaultTimeoutMs     = 3000
	HTTPMinTimeoutMs         = 1
	HTTPMaxTimeoutMs         = 10000
	HTTPDefaultMaxConcurrent = 4
	HTTPMinMaxConcurrent     = 1
	HTTPMaxMaxConcurrent     = 32
)

// WorkflowSettings are a workflow supervisor's settings, read once, every
// default applied.
type WorkflowSettings struct {
	SessionID, WorkflowID string
	Events                []string
	// When is the CEL condition over event; "" for none.
	When          string
	MaxConcurrent int
	Timeout       time.Duration
}

// HTTPSettings are the bounded numbers of an http supervisor's settings,
// every default applied (url and headers stay in Settings()).
type HTTPSettings struct {
	Timeout       time.Duration
	MaxConcurrent int
}

// WorkflowSettings reads the settings of a workflow supervisor. They were
// validated when saved (Parse); an error names the setting a stored
// document the rules no longer accept must fix, and how.
func (s Supervisor) WorkflowSettings() (WorkflowSettings, error) {
	if s.engine != "workflow" {
		return WorkflowSettings{}, fault.Newf(fault.ErrInvalid, "supervisor %s has engine %s, not workflow", s.id, s.engine)
	}
	m := s.settings
	cfg := WorkflowSettings{MaxConcurrent: WorkflowDefaultMaxConcurrent, Timeout: WorkflowDefaultTimeoutSeconds * time.Second}
	cfg.SessionID, _ = m["sessionId"].(string)
	if cfg.SessionID == "" {
		return WorkflowSettings{}, s.badSetting("sessionId", "is required: the session that holds the supervisor's workflow")
	}
	cfg.WorkflowID, _ = m["workflowId"].(string)
	if cfg.WorkflowID == "" {
		return WorkflowSettings{}, s.badSetting("workflowId", "is required: the workflow that decides")
	}
	events, _ := m["events"].([]any)
	for _, ev := range events {
		if e, ok := ev.(string); ok {
			cfg.Events = append(cfg.Events, e)
		}
	}
	if len(cfg.Events) == 0 {
		return WorkflowSettings{}, s.badSetting("events", `must list the event types that start a run, such as ["InputRequested"]`)
	}
	if v, ok := m["when"]; ok && v != nil {
		if cfg.When, ok = v.(string); !ok || strings.TrimSpace(cfg.When) == "" {
			return WorkflowSettings{}, s.badSetting("when", "must be a CEL condition over event, or left out")
		}
	}
	n, err := s.number("maxConcurrent", WorkflowMinMaxConcurrent, math.MaxInt32, WorkflowDefaultMaxConcurrent, "")
	if err != nil {
		return WorkflowSettings{}, err
	}
	cfg.MaxConcurrent = n
	if n, err = s.number("timeout", WorkflowMinTimeoutSeconds, WorkflowMaxTimeoutSeconds, WorkflowDefaultTimeoutSeconds, " of seconds"); err != nil {
		return WorkflowSettings{}, err
	}
	cfg.Timeout = time.Duration(n) * time.Second
	return cfg, nil
}

// HTTPSettings reads the numbers of an http supervisor's settings, as
// WorkflowSettings does.
func (s Supervisor) HTTPSettings() (HTTPSettings, error) {
	if s.engine != "http" {
		return HTTPSettings{}, fault.Newf(fault.ErrInvalid, "supervisor %s has engine %s, not http", s.id, s.engine)
	}
	ms, err := s.number("timeoutMs", HTTPMinTimeoutMs, HTTPMaxTimeoutMs, HTTPDefaultTimeoutMs, " (milliseconds)")
	if err != nil {
		return HTTPSettings{}, err
	}
	n, err := s.number("maxConcurrent", HTTPMinMaxConcurrent, HTTPMaxMaxConcurrent, HTTPDefaultMaxConcurrent, "")
	if err != nil {
		return HTTPSettings{}, err
	}
	return HTTPSettings{Timeout: time.Duration(ms) * time.Millisecond, MaxConcurrent: n}, nil
}

// number reads a whole-number setting within [lo, hi], def when absent.
func (s Supervisor) number(name string, lo, hi, def int, unit string) (int, error) {
	v, ok := s.settings[name]
	if !ok || v == nil {
		return def, nil
	}
	n, ok := wholeNumber(v)
	if !ok || n < int64(lo) || n > int64(hi) {
		want := fmt.Sprintf("must be a whole number%s of at least %d; leave it out for %d", unit, lo, def)
		if hi != math.MaxInt32 {
			want = fmt.Sprintf("must be a whole number%s from %d to %d; leave it out for %d", unit, lo, hi, def)
		}
		return 0, s.badSetting(name, want)
	}
	return int(n), nil
}

func (s Supervisor) badSetting(name, want string) error {
	return fault.Newf(fault.ErrInvalid, "supervisor %s: engine.settings.%s %s; fix it with PUT /api/supervisors/%s", s.id, name, want, s.id)
}

// withDefaults returns settings with every defaulted setting of the engine
// (a catalogue Setting with a Default) that is absent set to its default,
// so every read shows it. Only number settings have defaults; they are
// stored as json.Number, as decoded documents hold numbers.
func withDefaults(engine string, settings map[string]any) map[string]any {
	e, err := EngineByType(engine)
	if err != nil {
		return settings
	}
	for _, st := range e.Settings {
		if st.Default == "" || !strings.HasPrefix(st.Type, "number") {
			continue
		}
		if v, ok := settings[st.Name]; !ok || v == nil {
			if settings == nil {
				settings = map[string]any{}
			}
			settings[st.Name] = json.Number(st.Default)
		}
	}
	return settings
}
