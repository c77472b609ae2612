package plugins_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/application/pluginapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
)

// config decodes a config the way session parsing does, numbers as json.Number,
// so the tests see what validation sees in production.
func config(t *testing.T, src string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("test config %s: %v", src, err)
	}
	return m
}

func registry(t *testing.T) *pluginapp.Registry {
	t.Helper()
	r, err := pluginapp.NewRegistry(plugins.Descriptors()...)
	if err != nil {
		t.Fatalf("NewRegistry: got error %v, want nil", err)
	}
	return r
}

func describe(t *testing.T, typ string) plugin.Descriptor {
	t.Helper()
	d, ok := registry(t).Describe(typ)
	if !ok {
		t.Fatalf("Describe(%s): got not found, want a descriptor", typ)
	}
	return d
}

func paths(vs []fault.Violation) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Path)
	}
	return out
}

func TestRegistryHasEveryBuiltIn(t *testing.T) {
	want := map[string]plugin.Category{
		"MANUAL": plugin.Trigger, "WEBHOOK": plugin.Trigger, "SCHEDULE": plugin.Trigger, "SUPERVISOR_SIGNAL": plugin.Trigger,
		"HTTP_REQUEST": plugin.Processor, "TRANSFORM": plugin.Processor, "FILTER": plugin.Processor, "ROUTER": plugin.Processor,
		"SPLIT": plugin.Processor, "DELAY": plugin.Processor, "INPUT_REQUEST": plugin.Processor, "LOG": plugin.Processor, "FAIL": plugin.Processor, "TASK": plugin.Processor,
		"RESULT": plugin.Terminal, "WEBHOOK_OUT": plugin.Terminal, "SUPERVISOR_DECISION": plugin.Terminal,
	}
	r := registry(t)
	if got := len(r.All()); got != len(want) {
		t.Errorf("registered types: got %d, want %d", got, len(want))
	}
	for typ, cat := range want {
		d, ok := r.Describe(typ)
		if !ok {
			t.Errorf("Describe(%s): got not found, want category %s", typ, cat)
			continue
		}
		if d.Category != cat {
			t.Errorf("%s category: got %s, want %s", typ, d.Category, cat)
		}
	}
}

func TestPorts(t *testing.T) {
	tests := []struct {
		name, typ, config string
		want              []string
	}{
		{"router with fallback", "ROUTER", `{"routes": [{"port": "big", "condition": "payload.n > 10"}, {"port": "small", "condition": "payload.n < 2"}], "fallback": true}`, []string{"big", "small", "default"}},
		{"router without fallback", "ROUTER", `{"routes": [{"port": "big", "condition": "payload.n > 10"}, {"port": "small", "condition": "payload.n < 2"}], "fallback": false}`, []string{"big", "small"}},
		{"router fallback by default", "ROUTER", `{"routes": [{"port": "big", "condition": "true"}]}`, []string{"big", "default"}},
		{"router without valid routes", "ROUTER", `{"routes": [{"port": "Bad Name", "condition": "true"}, {"condition": "true"}]}`, []string{"default"}},
		{"router skips repeated ports", "ROUTER", `{"routes": [{"port": "a", "condition": "true"}, {"port": "a", "condition": "false"}], "fallback": false}`, []string{"a"}},
		{"input request approval", "INPUT_REQUEST", `{"prompt": "ok?", "mode": "approval"}`, []string{"approved", "rejected"}},
		{"input request default mode", "INPUT_REQUEST", `{"prompt": "ok?"}`, []string{"approved", "rejected"}},
		{"input request answer", "INPUT_REQUEST", `{"prompt": "name?", "mode": "answer"}`, []string{"default"}},
		{"http request", "HTTP_REQUEST", `{"url": "https://example.com"}`, []string{"default", "error"}},
		{"manual", "MANUAL", `{}`, []string{"default"}},
		{"fail keeps a port for SKIP", "FAIL", `{}`, []string{"default"}},
		{"result", "RESULT", `{}`, []string{}},
		{"webhook out", "WEBHOOK_OUT", `{"url": "https://example.com"}`, []string{}},
		{"supervisor decision", "SUPERVISOR_DECISION", `{"outcome": "SUCCESS"}`, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := describe(t, tt.typ)
			got := d.Ports(d.WithDefaults(config(t, tt.config)))
			if got == nil || !slices.Equal(got, tt.want) {
				t.Errorf("Ports: got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestValidateReportsViolationPaths(t *testing.T) {
	tests := []struct {
		name, typ, config string
		want              []string
	}{
		{"missing required field", "HTTP_REQUEST", `{"method": "POST"}`, []string{"url"}},
		{"wrong type", "DELAY", `{"duration": 5}`, []string{"duration"}},
		{"unknown field", "LOG", `{"msg": "hi"}`, []string{"msg"}},
		{"unknown field on a trigger without fields", "MANUAL", `{"payload": 1}`, []string{"payload"}},
		{"run fields are not trigger fields", "WEBHOOK", `{"timeout": "5s"}`, []string{"timeout"}},
		{"bad option", "LOG", `{"level": "loud"}`, []string{"level"}},
		{"bad option in array", "SUPERVISOR_SIGNAL", `{"kinds": ["EVENT", "NOISE"]}`, []string{"kinds[1]"}},
		{"empty kinds", "SUPERVISOR_SIGNAL", `{"kinds": []}`, []string{"kinds"}},
		{"bad cron", "SCHEDULE", `{"cron": "61 * * * *"}`, []string{"cron"}},
		{"cron with too few fields", "SCHEDULE", `{"cron": "* * * *"}`, []string{"cron"}},
		{"cron with seconds", "SCHEDULE", `{"cron": "0 0 9 * * *"}`, []string{"cron"}},
		{"cron zone prefix", "SCHEDULE", `{"cron": "TZ=UTC"}`, []string{"cron"}},
		{"cron that never fires", "SCHEDULE", `{"cron": "0 0 30 2 *"}`, []string{"cron"}},
		{"empty cron", "SCHEDULE", `{"cron": "  "}`, []string{"cron"}},
		{"unknown time zone", "SCHEDULE", `{"cron": "@hourly", "timezone": "Mars/Olympus"}`, []string{"timezone"}},
		{"host time zone", "SCHEDULE", `{"cron": "@hourly", "timezone": "Local"}`, []string{"timezone"}},
		{"duplicate router port", "ROUTER", `{"routes": [{"port": "a", "condition": "true"}, {"port": "a", "condition": "false"}]}`, []string{"routes[1].port"}},
		{"invalid router port", "ROUTER", `{"routes": [{"port": "ok", "condition": "true"}, {"port": "Not OK", "condition": "true"}]}`, []string{"routes[1].port"}},
		{"empty router port", "ROUTER", `{"routes": [{"port": "", "condition": "true"}]}`, []string{"routes[0].port"}},
		{"router port clashes with fallback", "ROUTER", `{"routes": [{"port": "default", "condition": "true"}]}`, []string{"routes[0].port"}},
		{"router route without condition", "ROUTER", `{"routes": [{"port": "a"}]}`, []string{"routes[0].condition"}},
		{"router without routes", "ROUTER", `{"routes": []}`, []string{"routes"}},
		{"empty expression", "TRANSFORM", `{"expression": " "}`, []string{"expression"}},
		{"zero timeout", "TRANSFORM", `{"expression": "payload", "timeout": "0s"}`, []string{"timeout"}},
		{"zero attempts", "LOG", `{"retry": {"maxAttempts": 0}}`, []string{"retry.maxAttempts"}},
		{"too many attempts in exponent form", "LOG", `{"retry": {"maxAttempts": 1e3}}`, []string{"retry.maxAttempts"}},
		{"unknown retry member", "LOG", `{"retry": {"attempts": 3}}`, []string{"retry.attempts"}},
		{"credential in URL", "HTTP_REQUEST", `{"url": "https://user:pw@example.com/x"}`, []string{"url"}},
		{"authorization header outside the secret field", "WEBHOOK_OUT", `{"url": "https://example.com", "headers": {"authorization": "Bearer x"}}`, []string{"headers.authorization"}},
		{"reserved header", "HTTP_REQUEST", `{"url": "https://example.com", "headers": {"Idempotency-Key": "k"}}`, []string{"headers.Idempotency-Key"}},
		{"header value not a string", "HTTP_REQUEST", `{"url": "https://example.com", "headers": {"X-N": 1}}`, []string{"headers.X-N"}},
		{"header value with line break", "HTTP_REQUEST", `{"url": "https://example.com", "headers": {"X-A": "a\r\nX-B: b"}}`, []string{"headers.X-A"}},
		{"response cap too large", "HTTP_REQUEST", `{"url": "https://example.com", "maxResponseBytes": 1073741824}`, []string{"maxResponseBytes"}},
		{"short webhook secret", "WEBHOOK", `{"secret": "short"}`, []string{"secret"}},
		{"bad split path", "SPLIT", `{"field": "body..items"}`, []string{"field"}},
		{"schema in approval mode", "INPUT_REQUEST", `{"prompt": "ok?", "schema": {"type": "object"}}`, []string{"schema"}},
		{"empty prompt", "INPUT_REQUEST", `{"prompt": ""}`, []string{"prompt"}},
		{"unknown outcome", "SUPERVISOR_DECISION", `{"outcome": "MAYBE"}`, []string{"outcome"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describe(t, tt.typ).Validate(config(t, tt.config))
			if !slices.Equal(paths(got), tt.want) {
				t.Errorf("violation paths: got %q (%v), want %q", paths(got), got, tt.want)
			}
		})
	}
}

func TestValidateAcceptsGoodConfigs(t *testing.T) {
	tests := []struct{ typ, config string }{
		{"SCHEDULE", `{"cron": "*/5 * * * *"}`},
		{"SCHEDULE", `{"cron": "@hourly", "timezone": "America/New_York"}`},
		{"SCHEDULE", `{"cron": "@every 15m"}`},
		{"SCHEDULE", `{"cron": "0 0 29 2 *"}`},
		{"ROUTER", `{"routes": [{"port": "default", "condition": "true"}], "fallback": false}`},
		{"HTTP_REQUEST", `{"url": "http://localhost:8080/x?q=1", "method": "HEAD", "maxResponseBytes": 1, "timeout": "2m", "retry": {"maxAttempts": 100, "backoff": "0s"}}`},
		{"INPUT_REQUEST", `{"prompt": "Name?", "mode": "answer", "schema": {"type": "object"}}`},
		{"SPLIT", `{}`},
		{"WEBHOOK", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.typ+" "+tt.config, func(t *testing.T) {
			if got := describe(t, tt.typ).Validate(config(t, tt.config)); len(got) != 0 {
				t.Errorf("Validate: got %v, want no violations", got)
			}
		})
	}
}

// TestUsageExamplesAreValid keeps the catalogue honest: a user who copies
// an example must get a config that applies.
func TestUsageExamplesAreValid(t *testing.T) {
	const prefix = "Example config: "
	for _, d := range plugins.Descriptors() {
		t.Run(d.Type, func(t *testing.T) {
			i := strings.Index(d.Usage, prefix)
			if i < 0 {
				t.Fatalf("usage: got %q, want a line starting %q", d.Usage, prefix)
			}
			line, _, _ := strings.Cut(d.Usage[i+len(prefix):], "\n")
			if got := d.Validate(config(t, line)); len(got) != 0 {
				t.Errorf("example %s: got violations %v, want none", line, got)
			}
		})
	}
}

func TestFieldsAreDocumented(t *testing.T) {
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	var walk func(t *testing.T, path string, f plugin.Field)
	walk = func(t *testing.T, path string, f plugin.Field) {
		if !camel.MatchString(f.Name) {
			t.Errorf("%s: name got %q, want camelCase", path, f.Name)
		}
		if strings.TrimSpace(f.Description) == "" {
			t.Errorf("%s: description got empty, want text", path)
		}
		if f.Items != nil {
			walk(t, path+"[]", *f.Items)
		}
		for _, m := range f.Fields {
			walk(t, path+"."+m.Name, m)
		}
	}
	for _, d := range plugins.Descriptors() {
		t.Run(d.Type, func(t *testing.T) {
			if d.Usage == "" || strings.Count(d.Description, ".") != 1 || !strings.HasSuffix(d.Description, ".") {
				t.Errorf("description %q and usage %q: want one sentence and a usage text", d.Description, d.Usage)
			}
			names := []string{}
			for _, f := range d.Fields {
				walk(t, d.Type+"."+f.Name, f)
				names = append(names, f.Name)
			}
			runFields := slices.Contains(names, "timeout") && slices.Contains(names, "retry")
			if want := d.Category != plugin.Trigger; runFields != want {
				t.Errorf("has timeout and retry: got %v, want %v (fields %v)", runFields, want, names)
			}
		})
	}
}

func TestMaskHidesSecrets(t *testing.T) {
	tests := []struct {
		typ, config, field string
	}{
		{"HTTP_REQUEST", `{"url": "https://example.com", "authorization": "Bearer abc"}`, "authorization"},
		{"WEBHOOK_OUT", `{"url": "https://example.com", "authorization": "Bearer abc"}`, "authorization"},
		{"WEBHOOK", `{"secret": "0123456789abcdef"}`, "secret"},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			d := describe(t, tt.typ)
			c := config(t, tt.config)
			got := d.Mask(c)
			if got[tt.field] != plugin.MaskedValue {
				t.Errorf("masked %s: got %v, want %q", tt.field, got[tt.field], plugin.MaskedValue)
			}
			if got["url"] != c["url"] {
				t.Errorf("masked url: got %v, want %v unchanged", got["url"], c["url"])
			}
			if c[tt.field] == plugin.MaskedValue {
				t.Errorf("original %s: got %v, want it untouched", tt.field, c[tt.field])
			}
		})
	}
}

// TestHostileConfigsDoNotPanic feeds every descriptor configs that never
// passed validation, as the catalogue does with a user's query: ports and
// checks must answer, not panic.
func TestHostileConfigsDoNotPanic(t *testing.T) {
	values := []any{nil, "", "x", json.Number("5"), json.Number("1e999"), 5, 3.5, true, false,
		[]any{}, []any{nil, 1, "a", map[string]any{"port": 5}, map[string]any{"port": "a", "condition": 1}, map[string]any{}},
		map[string]any{}, map[string]any{"maxAttempts": "x", "backoff": 1}}
	var hostile []map[string]any
	hostile = append(hostile, nil, map[string]any{})
	for _, d := range plugins.Descriptors() {
		names := []string{"routes", "fallback", "mode", "cron", "timezone", "headers", "url", "retry", "timeout"}
		for _, f := range d.Fields {
			names = append(names, f.Name)
		}
		for _, v := range values {
			all := map[string]any{}
			for _, n := range names {
				all[n] = v
			}
			hostile = append(hostile, all)
		}
	}
	for _, d := range plugins.Descriptors() {
		t.Run(d.Type, func(t *testing.T) {
			for _, c := range hostile {
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("config %s: got panic %v, want an answer", show(c), r)
						}
					}()
					d.Ports(c)
					d.Ports(d.WithDefaults(c))
					d.Validate(c)
					if d.CheckFunc != nil {
						d.CheckFunc(c)
						d.CheckFunc(d.WithDefaults(c))
					}
				}()
			}
		})
	}
}

func show(c map[string]any) string {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(c); err != nil {
		return fmt.Sprintf("%#v", c)
	}
	return strings.TrimSpace(b.String())
}

func TestDescriptorsAreFreshValues(t *testing.T) {
	a := plugins.Descriptors()
	a[0].Fields = append(a[0].Fields, plugin.Field{Name: "x"})
	a[4].Fields[0].Name = "changed"
	b := plugins.Descriptors()
	if len(b[0].Fields) != 0 || b[4].Fields[0].Name == "changed" {
		t.Errorf("second call: got %v and %q, want descriptors unaffected by changes to the first", b[0].Fields, b[4].Fields[0].Name)
	}
}
