package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
)

// The defaults and bounds of engine settings (seed 000), declared once:
// the catalogue's text (Setting.Default and Description), the validator
// (settingChecks) and the engines (WorkflowSettings, HTTPSettings,
// ProcessSettings) read them from here.
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
	// process: characters of the command's path and of the args setting
	ProcessMaxCommandLen = 1024
	ProcessMaxArgsLen    = 16384
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

// HTTPSettings are an http supervisor's settings, read once, every
// default applied.
type HTTPSettings struct {
	// URL is where signals are posted ("" for none: the system reads the
	// agent API only); Where is it without its query, for messages.
	URL, Where string
	// Headers are sent with their ${env.NAME} references expanded
	// (ExpandEnvRefs), SecretHeaders as they are. Never nil.
	Headers, SecretHeaders map[string]string
	Timeout                time.Duration
	MaxConcurrent          int
}

// ProcessSettings are a process supervisor's settings, read once.
type ProcessSettings struct {
	// Command is the executable, an absolute path; it is run as it is (no
	// shell, no PATH lookup). Whether this server runs it is its
	// configuration's choice, not the document's.
	Command string
	// Args are its arguments, one per line of the args setting ("\r\n"
	// too); a single trailing newline ends the last argument rather than
	// adding an empty one. Nil when there are none.
	Args []string
}

// ProcessSettings reads the settings of a process supervisor, as
// WorkflowSettings does.
func (s Supervisor) ProcessSettings() (ProcessSettings, error) {
	if s.engine != "process" {
		return ProcessSettings{}, fault.Newf(fault.ErrInvalid, "supervisor %s has engine %s, not process", s.id, s.engine)
	}
	cmd, _ := s.settings["command"].(string)
	switch {
	case cmd == "":
		return ProcessSettings{}, s.badSetting("command", "is required: the executable's absolute path, such as /opt/yukta/decide")
	case !path.IsAbs(cmd) || strings.ContainsAny(cmd, "\n\r") || utf8.RuneCountInString(cmd) > ProcessMaxCommandLen:
		return ProcessSettings{}, s.badSetting("command", fmt.Sprintf("must be an absolute path of at most %d characters, such as /opt/yukta/decide", ProcessMaxCommandLen))
	}
	cfg := ProcessSettings{Command: cmd}
	a, _ := s.settings["args"].(string)
	if utf8.RuneCountInString(a) > ProcessMaxArgsLen {
		return ProcessSettings{}, s.badSetting("args", fmt.Sprintf("must be at most %d characters, one argument per line", ProcessMaxArgsLen))
	}
	if a != "" {
		a = strings.TrimSuffix(strings.TrimSuffix(a, "\n"), "\r")
		for _, line := range strings.Split(a, "\n") {
			cfg.Args = append(cfg.Args, strings.TrimSuffix(line, "\r"))
		}
	}
	return cfg, nil
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

// HTTPSettings reads the settings of an http supervisor, as
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
	cfg := HTTPSettings{Timeout: time.Duration(ms) * time.Millisecond, MaxConcurrent: n}
	if v, ok := s.settings["url"]; ok && v != nil {
		str, _ := v.(string)
		u, err := url.Parse(str)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return HTTPSettings{}, s.badSetting("url", "is not an absolute http or https URL such as https://agent.example.com/yukta/signals")
		}
		cfg.URL, cfg.Where = str, u.Scheme+"://"+u.Host+u.EscapedPath()
	}
	if cfg.Headers, err = headerMap(s.settings["headers"]); err != nil {
		return HTTPSettings{}, s.badSetting("headers", err.Error())
	}
	if cfg.SecretHeaders, err = headerMap(s.settings["secretHeaders"]); err != nil {
		return HTTPSettings{}, s.badSetting("secretHeaders", err.Error())
	}
	return cfg, nil
}

// headerMap reads a headers setting: header names to string values.
func headerMap(v any) (map[string]string, error) {
	out := map[string]string{}
	if v == nil {
		return out, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New(`must be an object of header names to string values, such as {"X-Team": "ops"}`)
	}
	for k, val := range m {
		str, ok := val.(string)
		if !ok {
			return nil, fmt.Errorf("%s must be a string", strconv.Quote(k))
		}
		out[k] = str
	}
	return out, nil
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
