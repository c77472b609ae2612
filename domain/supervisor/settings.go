package supervisor

import (
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// settingCheck is what the catalogue's prose says about one setting, in a
// form code can check: the value kind (from Setting.Type) and the bounds
// and formats the description states.
type settingCheck struct {
	min, max int64  // whole numbers; max 0 means no upper bound here
	format   string // url, absPath, id
	maxLen   int    // strings; 0 means 4096
}

// settingChecks holds the bounds of settings, keyed engine.setting. A
// setting missing here still has its Type checked.
var settingChecks = map[string]settingCheck{
	"http.url":               {format: "url", maxLen: 2048},
	"http.timeoutMs":         {min: HTTPMinTimeoutMs, max: HTTPMaxTimeoutMs},
	"http.maxConcurrent":     {min: HTTPMinMaxConcurrent, max: HTTPMaxMaxConcurrent},
	"workflow.sessionId":     {format: "id", maxLen: 64},
	"workflow.workflowId":    {format: "id", maxLen: 64},
	"workflow.maxConcurrent": {min: WorkflowMinMaxConcurrent}, // the upper bound is the slot pool, which the application knows
	"workflow.timeout":       {min: WorkflowMinTimeoutSeconds, max: WorkflowMaxTimeoutSeconds},
	"process.command":        {format: "absPath", maxLen: ProcessMaxCommandLen},
	"process.args":           {maxLen: ProcessMaxArgsLen},
}

// Limits of header settings.
const (
	MaxHeaders        = 32
	MaxHeaderValueLen = 4096
	MaxExprLen        = 4096
)

var (
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
	envRef     = regexp.MustCompile(`\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}`)
	// reservedHeaders are set by Yukta on every post.
	reservedHeaders = []string{"host", "content-length", "content-type", "transfer-encoding", "connection"}
)

// EnvRefNames lists the variables a header value reads as ${env.NAME}, in
// order, each as often as it is named (the document's own rules allow no
// other ${…}).
func EnvRefNames(v string) []string {
	var out []string
	for _, m := range envRef.FindAllStringSubmatch(v, -1) {
		out = append(out, m[1])
	}
	return out
}

// ExpandEnvRefs replaces each ${env.NAME} of a header value by value(NAME).
func ExpandEnvRefs(v string, value func(name string) string) string {
	return envRef.ReplaceAllStringFunc(v, func(ref string) string {
		return value(envRef.FindStringSubmatch(ref)[1])
	})
}

// settings checks an engine's settings against its catalogue entry:
// unknown settings are refused, required ones must be there, each value
// must have the setting's type and stay within its bounds.
func (r *reader) settings(e Engine, m map[string]any, base string, check ExprChecker) {
	names := make([]string, len(e.Settings))
	for i, s := range e.Settings {
		names[i] = s.Name
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(names, k) {
			r.add(jsonvalue.Key(base, k), "unknown setting %q; the %s engine takes: %s", k, e.Type, strings.Join(names, ", "))
		}
	}
	for _, s := range e.Settings {
		p := jsonvalue.Key(base, s.Name)
		v, ok := m[s.Name]
		if !ok || v == nil {
			if s.Required {
				r.add(p, "is required by the %s engine: %s", e.Type, s.Description)
			}
			continue
		}
		c := settingChecks[e.Type+"."+s.Name]
		switch s.Type {
		case "number", "number (seconds)":
			hi := c.max
			if hi == 0 {
				hi = math.MaxInt32
			}
			r.intValue(v, p, c.min, hi)
		case "string", "expression":
			str, ok := v.(string)
			if !ok {
				r.add(p, "must be a string, got %s", kind(v))
				continue
			}
			r.settingString(str, p, c, s.Type == "expression", check)
		case "map", "secret map":
			r.headers(v, p, s.Type == "secret map", m)
		case "list of event type names":
			r.eventTypes(v, p)
		default:
			// A setting type this code does not know is a catalogue bug; a
			// test keeps every type handled.
			r.add(p, "cannot be checked (setting type %q); report this as a bug", s.Type)
		}
	}
}

func (r *reader) settingString(s, p string, c settingCheck, expr bool, check ExprChecker) {
	limit := c.maxLen
	if limit == 0 {
		limit = MaxExprLen
	}
	if n := utf8.RuneCountInString(s); n > limit {
		r.add(p, "is %d characters long; the limit is %d", n, limit)
		return
	}
	switch c.format {
	case "url":
		u, err := url.Parse(s)
		switch {
		case err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
			r.add(p, "%q is not an absolute http or https URL such as https://agent.example.com/yukta/signals", clip(s))
		case u.User != nil:
			r.add(p, "must not carry a user or password (it would show on every read); send credentials in secretHeaders")
		case u.Fragment != "":
			r.add(p, "must not have a #fragment; leave it out")
		}
	case "absPath":
		if !path.IsAbs(s) || strings.ContainsAny(s, "\n\r") {
			r.add(p, "%q is not an absolute path such as /opt/yukta/decide; no shell is used, so give the executable itself", clip(s))
		}
	case "id":
		if !session.ValidID(s) {
			r.add(p, "%q is not an id (lowercase letters, digits, '-' and '_', starting with a letter or digit)", clip(s))
		}
	}
	if expr {
		if strings.TrimSpace(s) == "" {
			r.add(p, "is empty; give a condition or leave it out")
			return
		}
		r.expression(s, p, EngineWhen, check)
	}
}

// headers checks a map of header names to values. Plain headers may name
// environment variables as ${env.NAME}; secret headers may not repeat a
// plain header's name.
func (r *reader) headers(v any, p string, secret bool, all map[string]any) {
	m, ok := v.(map[string]any)
	if !ok {
		r.add(p, `must be an object of header names to values, such as {"X-Team": "ops"}, got %s`, kind(v))
		return
	}
	if len(m) > MaxHeaders {
		r.add(p, "has %d headers; the limit is %d", len(m), MaxHeaders)
		return
	}
	plain, _ := all["headers"].(map[string]any)
	for _, name := range sortedKeys(m) {
		hp := jsonvalue.Key(p, name)
		val, ok := m[name].(string)
		switch {
		case !headerName.MatchString(name):
			r.add(hp, "%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~)", clip(name))
			continue
		case slices.Contains(reservedHeaders, strings.ToLower(name)):
			r.add(hp, "Yukta sets %s itself; leave it out", name)
			continue
		case !ok:
			r.add(hp, "must be a string, got %s", kind(m[name]))
			continue
		case utf8.RuneCountInString(val) > MaxHeaderValueLen:
			r.add(hp, "is %d characters long; the limit is %d", utf8.RuneCountInString(val), MaxHeaderValueLen)
			continue
		case strings.ContainsAny(val, "\r\n"):
			r.add(hp, "must not contain line breaks")
			continue
		}
		if secret {
			for other := range plain {
				if strings.EqualFold(other, name) {
					r.add(hp, "is also in headers; give each header once")
				}
			}
			continue
		}
		if rest := envRef.ReplaceAllString(val, ""); strings.Contains(rest, "${") {
			r.add(hp, "%q has a ${...} that is not ${env.NAME}; environment references are the only substitution", clip(val))
		} else if plugin.SecretName(name) && !envRef.MatchString(val) {
			// Plain headers show on every read: a header whose name says it
			// carries a secret must take it from the environment, or be a
			// secret header (masked on every read).
			r.add(hp, "%s carries a secret by its name, and plain headers show on every read; move it to secretHeaders, or take its value from the environment (${env.NAME})", name)
		}
	}
}

func (r *reader) eventTypes(v any, p string) {
	a, ok := v.([]any)
	if !ok {
		r.add(p, `must be an array of event types, such as ["InputRequested"], got %s`, kind(v))
		return
	}
	if len(a) == 0 {
		r.add(p, "must list at least one event type, such as InputRequested")
	}
	var seen []string
	for i, e := range a {
		ep := jsonvalue.Index(p, i)
		s, ok := e.(string)
		switch {
		case !ok:
			r.add(ep, "must be a string, got %s", kind(e))
		case !slices.Contains(EventTypes, s):
			r.add(ep, "%q is not an event type; use one of %s", clip(s), oneOf(EventTypes))
		case slices.Contains(seen, s):
			r.add(ep, "repeats %s", s)
		default:
			seen = append(seen, s)
		}
	}
}

// secretSettings lists the settings of an engine whose values are secret
// maps: each member's value is shown as *** on every read.
func secretSettings(engine string) []string {
	e, err := EngineByType(engine)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range e.Settings {
		if s.Type == "secret map" {
			out = append(out, s.Name)
		}
	}
	return out
}

// Masked returns a copy whose secret settings (secretHeaders) read *** for
// every member. Every read path goes through it.
func (s Supervisor) Masked() Supervisor {
	out := s
	out.settings = copySettings(s.settings)
	for _, name := range secretSettings(s.engine) {
		if m, ok := out.settings[name].(map[string]any); ok {
			for k := range m {
				m[k] = plugin.MaskedValue
			}
		}
	}
	return out
}

// KeepSecrets lets a client send back a supervisor it read (secrets masked)
// without losing the secrets: a member of a secret setting whose value is
// *** takes the value the same member had in prev (same engine type). A
// masked value with nothing to keep is a violation, never stored as ***.
func (s Supervisor) KeepSecrets(prev *Supervisor) (Supervisor, error) {
	out := s
	out.settings = copySettings(s.settings)
	var vs []fault.Violation
	for _, name := range secretSettings(s.engine) {
		m, ok := out.settings[name].(map[string]any)
		if !ok {
			continue
		}
		var old map[string]any
		if prev != nil && prev.engine == s.engine {
			old, _ = prev.settings[name].(map[string]any)
		}
		for _, k := range sortedKeys(m) {
			if m[k] != plugin.MaskedValue {
				continue
			}
			if ov, ok := old[k].(string); ok && ov != plugin.MaskedValue {
				m[k] = ov
				continue
			}
			vs = append(vs, fault.Violation{Path: jsonvalue.Key(jsonvalue.Key("engine.settings", name), k),
				Message: fmt.Sprintf("is %q but there is no stored value to keep; send the real value", plugin.MaskedValue)})
		}
	}
	if len(vs) > 0 {
		return Supervisor{}, &fault.ValidationError{Subject: "supervisor", Violations: vs}
	}
	return out, nil
}
