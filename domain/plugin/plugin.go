// Package plugin describes node types: what a node of a type needs in its
// config and which output ports it has for a given config. The behaviour of a
// type lives in adapters; the description lives here because validating a
// workflow needs it and must not depend on any adapter.
package plugin

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// Category says where a node of a type may sit in a workflow.
type Category string

// The categories. A trigger starts runs and has no inbound edge; a terminal
// ends a path and has no outbound edge; a processor sits between.
const (
	Trigger   Category = "trigger"
	Processor Category = "processor"
	Terminal  Category = "terminal"
)

// Valid reports whether c is one of the known categories.
func (c Category) Valid() bool { return c == Trigger || c == Processor || c == Terminal }

// FieldType is the type of one config field.
type FieldType string

// The field types. Expression is CEL source; Duration is Go syntax ("1.5s",
// "2m"); Cron is a cron expression; URL is an absolute http(s) URL; Any is any
// JSON value.
const (
	String     FieldType = "string"
	Integer    FieldType = "integer"
	Number     FieldType = "number"
	Boolean    FieldType = "boolean"
	Object     FieldType = "object"
	Array      FieldType = "array"
	Duration   FieldType = "duration"
	Expression FieldType = "expression"
	Cron       FieldType = "cron"
	URL        FieldType = "url"
	Any        FieldType = "any"
)

// DefaultPort is the port every non-terminal node has unless its type says otherwise.
const DefaultPort = "default"

// Field is one typed config field of a node type.
type Field struct {
	Name        string
	Type        FieldType
	Description string
	Required    bool
	// Default is used when the field is absent. Nil means no default.
	Default any
	// Options, when set, lists the only allowed values of a String field.
	Options []string
	// Secret fields are masked ("***") on every read path. A secret map (an
	// Object field with Values) is masked member by member: the names stay
	// visible and each value reads "***".
	Secret bool
	// Items describes each element of an Array field; nil allows any element.
	Items *Field
	// Fields describes the members of an Object field (or of each Array
	// element of type Object). Nil allows any members.
	Fields []Field
	// Values makes an Object field a map: any member name, each value
	// checked against Values (its Name and Description describe one value).
	// A field has Fields or Values, never both.
	Values *Field
}

// Descriptor is everything Yukta knows about a node type without running it.
type Descriptor struct {
	Type        string
	Category    Category
	Description string
	// Usage is a short pattern showing how the type is used in a workflow.
	Usage  string
	Fields []Field
	// PortsFunc returns the output ports for a config that passed Validate.
	// Nil means the single DefaultPort (none for terminals).
	PortsFunc func(config map[string]any) []string
	// CheckFunc adds type-specific checks (cron syntax, CEL compilation,
	// credentials in plain fields). It runs in the same pass as the field
	// checks, so one answer lists both: it sees only the fields that passed
	// their own checks (with defaults for those left out); a field that
	// failed, or an unknown one, is absent, not defaulted, and a CheckFunc
	// violation about a field already reported is dropped. Paths are
	// relative to the config. A secret field sent back as MaskedValue is
	// absent from the config it sees; a member of a secret map sent back as
	// MaskedValue is present with that value (so checks across fields, such
	// as a name set twice, still see it) and must be taken as the stored
	// value, which passed.
	CheckFunc func(config map[string]any) []fault.Violation
	// TaskFunc is set for a type whose messages remote workers take from a
	// queue (TASK) instead of the engine running them: it reads the queue
	// and the lease bounds from a config that passed Validate, with its
	// defaults applied.
	TaskFunc func(config map[string]any) Task
}

// Task is where the messages of a node run by remote workers wait, and how
// long a worker may hold one.
type Task struct {
	Queue string
	// Lease is how long a delivery (and each heartbeat) holds the message.
	Lease time.Duration
	// Timeout is how long one attempt may take, from its delivery.
	Timeout time.Duration
}

// Task returns the task of a node of this type with config, ok false for a
// type the engine runs itself.
func (d Descriptor) Task(config map[string]any) (Task, bool) {
	if d.TaskFunc == nil {
		return Task{}, false
	}
	return d.TaskFunc(d.WithDefaults(config)), true
}

// MaskedValue replaces the value of a secret field on every read path.
const MaskedValue = "***"

var typeName = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// Check reports problems with the descriptor itself; a registry refuses a
// descriptor that fails it, so a bad built-in fails at startup, not at use.
func (d Descriptor) Check() error {
	if !typeName.MatchString(d.Type) {
		return fmt.Errorf("plugin: type %q must match %s", d.Type, typeName)
	}
	if !d.Category.Valid() {
		return fmt.Errorf("plugin %s: unknown category %q", d.Type, d.Category)
	}
	if d.Description == "" {
		return fmt.Errorf("plugin %s: description is empty", d.Type)
	}
	seen := map[string]bool{}
	for _, f := range d.Fields {
		if f.Name == "" || seen[f.Name] {
			return fmt.Errorf("plugin %s: field name %q is empty or repeated", d.Type, f.Name)
		}
		seen[f.Name] = true
		if t, ok := unknownType(f); !ok {
			return fmt.Errorf("plugin %s: field %q uses unknown field type %q", d.Type, f.Name, t)
		}
		if f.Values != nil && (f.Type != Object || f.Fields != nil) {
			return fmt.Errorf("plugin %s: field %q has Values, which only an Object field without Fields may have", d.Type, f.Name)
		}
		if f.Default != nil && len(checkValue(f, f.Default, f.Name)) > 0 {
			return fmt.Errorf("plugin %s: default of field %q does not match its type %s", d.Type, f.Name, f.Type)
		}
	}
	return nil
}

// Ports returns the output ports of a node of this type with config.
func (d Descriptor) Ports(config map[string]any) []string {
	if d.PortsFunc != nil {
		return d.PortsFunc(config)
	}
	if d.Category == Terminal {
		return []string{}
	}
	return []string{DefaultPort}
}

// Validate checks config against the declared fields and the type's own
// checks, and returns every violation with a path relative to the config.
func (d Descriptor) Validate(config map[string]any) []fault.Violation {
	var out []fault.Violation
	known := make(map[string]bool, len(d.Fields))
	// A secret sent back masked stands for the stored value, which passed
	// these checks when it was applied; the type's own checks must not see
	// the mask itself.
	checked, cloned := config, false
	for _, f := range d.Fields {
		known[f.Name] = true
		v, ok := config[f.Name]
		if f.Secret && v == MaskedValue {
			if !cloned {
				checked, cloned = maps.Clone(config), true
			}
			delete(checked, f.Name)
			continue
		}
		if !ok || v == nil {
			if f.Required {
				out = append(out, fault.Violation{Path: f.Name, Message: fmt.Sprintf("is required (%s: %s)", f.Type, f.Description)})
			}
			continue
		}
		if m, isMap := v.(map[string]any); isMap && f.Secret && f.Values != nil {
			// Members sent back masked stand for stored values too.
			v = unmasked(m)
		}
		out = append(out, checkValue(f, v, f.Name)...)
	}
	for _, k := range slices.Sorted(maps.Keys(config)) {
		if !known[k] {
			out = append(out, fault.Violation{Path: k, Message: fmt.Sprintf("is not a config field of %s; known fields: %s", d.Type, strings.Join(fieldNames(d.Fields), ", "))})
		}
	}
	if d.CheckFunc == nil {
		return out
	}
	// The type's own checks run on what passed, in the same pass: a field
	// that failed (or is unknown) is left out rather than defaulted, and
	// what they say about a field already reported is a consequence of it.
	failed := map[string]bool{}
	for _, v := range out {
		failed[topField(v.Path)] = true
	}
	if len(failed) > 0 {
		checked = maps.Clone(checked)
		maps.DeleteFunc(checked, func(k string, _ any) bool { return failed[k] })
	}
	passed := d.WithDefaults(checked)
	maps.DeleteFunc(passed, func(k string, _ any) bool { return failed[k] })
	for _, v := range d.CheckFunc(passed) {
		if !failed[topField(v.Path)] {
			out = append(out, v)
		}
	}
	return out
}

// topField returns the config field a violation path starts with
// ("headers" of "headers.X-Api-Key", "routes" of "routes[0].port").
func topField(path string) string {
	if i := strings.IndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return path
}

// unmasked returns m without the members whose value is MaskedValue.
func unmasked(m map[string]any) map[string]any {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(_ string, v any) bool { return v == MaskedValue })
	return out
}

// WithDefaults returns a copy of config with absent (or null) fields set to their defaults.
func (d Descriptor) WithDefaults(config map[string]any) map[string]any {
	out := maps.Clone(config)
	if out == nil {
		out = map[string]any{}
	}
	for _, f := range d.Fields {
		if v, ok := out[f.Name]; (!ok || v == nil) && f.Default != nil { // null means absent, as in Validate
			out[f.Name] = f.Default
		}
	}
	return out
}

// Mask returns a copy of config with every secret field replaced by
// MaskedValue, and every value of a secret map by MaskedValue (its names
// kept, so a reader sees which headers are set).
func (d Descriptor) Mask(config map[string]any) map[string]any {
	out := maps.Clone(config)
	for _, f := range d.Fields {
		v, ok := out[f.Name]
		if !ok || v == nil || !f.Secret { // null is "not set", nothing to hide
			continue
		}
		m, isMap := v.(map[string]any)
		if f.Values == nil || !isMap {
			out[f.Name] = MaskedValue
			continue
		}
		masked := make(map[string]any, len(m))
		for k, e := range m {
			if e != nil {
				e = MaskedValue
			}
			masked[k] = e
		}
		out[f.Name] = masked
	}
	return out
}

// SecretFields lists the names of the secret fields.
func (d Descriptor) SecretFields() []string {
	var out []string
	for _, f := range d.Fields {
		if f.Secret {
			out = append(out, f.Name)
		}
	}
	return out
}

// KeepSecrets returns a copy of config in which every secret sent back as
// MaskedValue takes its value in prev (the config stored before, nil when
// there is none): a secret field as a whole, and a secret map member by
// member (a name that prev's map does not hold needs its real value). It
// also returns the paths, relative to the config, of masked values with
// nothing to keep ("authorization", "secretHeaders.X-API-Key"); a masked
// value is never kept as a value.
func (d Descriptor) KeepSecrets(config, prev map[string]any) (map[string]any, []string) {
	out, cloned := config, false
	var missing []string
	set := func(name string, v any) {
		if !cloned {
			out, cloned = maps.Clone(config), true
		}
		out[name] = v
	}
	for _, f := range d.Fields {
		if !f.Secret {
			continue
		}
		v := config[f.Name]
		if v == MaskedValue {
			if old := prev[f.Name]; old != nil && old != MaskedValue {
				set(f.Name, old)
			} else {
				missing = append(missing, f.Name)
			}
			continue
		}
		m, ok := v.(map[string]any)
		if f.Values == nil || !ok {
			continue
		}
		old, _ := prev[f.Name].(map[string]any)
		var kept map[string]any
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if m[k] != MaskedValue {
				continue
			}
			if kept == nil {
				kept = maps.Clone(m)
			}
			if o, ok := old[k]; ok && o != nil && o != MaskedValue {
				kept[k] = o
			} else {
				missing = append(missing, f.Name+"."+k)
			}
		}
		if kept != nil {
			set(f.Name, kept)
		}
	}
	return out, missing
}

// SecretValues lists the text of every secret in config: each string
// secret field and each string value of a secret map, in field order, map
// members by name. MaskedValue itself is left out. The runtime masks these
// wherever a run's output could repeat them.
func (d Descriptor) SecretValues(config map[string]any) []string {
	var out []string
	for _, f := range d.Fields {
		if !f.Secret {
			continue
		}
		switch v := config[f.Name].(type) {
		case string:
			if v != MaskedValue {
				out = append(out, v)
			}
		case map[string]any:
			if f.Values == nil {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if s, ok := v[k].(string); ok && s != MaskedValue {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// unknownType returns the first type in f, its items and members that is not
// one of the field types, and false; or "", true when all are known.
func unknownType(f Field) (FieldType, bool) {
	switch f.Type {
	case String, Integer, Number, Boolean, Object, Array, Duration, Expression, Cron, URL, Any:
	default:
		return f.Type, false
	}
	if f.Items != nil {
		if t, ok := unknownType(*f.Items); !ok {
			return t, false
		}
	}
	for _, m := range f.Fields {
		if t, ok := unknownType(m); !ok {
			return t, false
		}
	}
	if f.Values != nil {
		if t, ok := unknownType(*f.Values); !ok {
			return t, false
		}
	}
	return "", true
}

func fieldNames(fs []Field) []string {
	if len(fs) == 0 {
		return []string{"(none)"}
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// checkValue checks one JSON value (as decoded by encoding/json with
// UseNumber or into float64) against f.
func checkValue(f Field, v any, path string) []fault.Violation {
	bad := func(format string, args ...any) []fault.Violation {
		return []fault.Violation{{Path: path, Message: fmt.Sprintf(format, args...)}}
	}
	switch f.Type {
	case String, Expression, Cron:
		s, ok := v.(string)
		if !ok {
			return bad("must be a string, got %s", jsonKind(v))
		}
		if f.Type != String && strings.TrimSpace(s) == "" {
			return bad("must not be empty")
		}
		if len(f.Options) > 0 && !slices.Contains(f.Options, s) {
			return bad("must be one of %s, got %q", strings.Join(f.Options, ", "), s)
		}
	case URL:
		s, ok := v.(string)
		if !ok {
			return bad("must be a URL string, got %s", jsonKind(v))
		}
		if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") || len(s) < len("http://x") {
			return bad("must be an absolute http:// or https:// URL, got %q", RedactURL(s))
		}
	case Duration:
		s, ok := v.(string)
		if !ok {
			return bad(`must be a duration string such as "500ms" or "2m", got %s`, jsonKind(v))
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return bad(`must be a non-negative duration such as "500ms" or "2m", got %q`, s)
		}
	case Integer:
		n, ok := NumberValue(v)
		if !ok || n != math.Trunc(n) || math.IsInf(n, 0) {
			return bad("must be an integer, got %s", jsonKind(v))
		}
	case Number:
		if _, ok := NumberValue(v); !ok {
			return bad("must be a number, got %s", jsonKind(v))
		}
	case Boolean:
		if _, ok := v.(bool); !ok {
			return bad("must be true or false, got %s", jsonKind(v))
		}
	case Object:
		m, ok := v.(map[string]any)
		if !ok {
			return bad("must be an object, got %s", jsonKind(v))
		}
		if f.Values != nil {
			var out []fault.Violation
			for _, k := range slices.Sorted(maps.Keys(m)) {
				out = append(out, checkValue(*f.Values, m[k], path+"."+k)...)
			}
			return out
		}
		return checkMembers(f.Fields, m, path)
	case Array:
		a, ok := v.([]any)
		if !ok {
			return bad("must be an array, got %s", jsonKind(v))
		}
		var out []fault.Violation
		if f.Items != nil {
			for i, e := range a {
				out = append(out, checkValue(*f.Items, e, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
		return out
	case Any:
	default:
		return bad("has unknown field type %q", f.Type)
	}
	return nil
}

func checkMembers(fields []Field, m map[string]any, path string) []fault.Violation {
	if fields == nil {
		return nil
	}
	var out []fault.Violation
	known := map[string]bool{}
	for _, f := range fields {
		known[f.Name] = true
		v, ok := m[f.Name]
		if !ok || v == nil {
			if f.Required {
				out = append(out, fault.Violation{Path: path + "." + f.Name, Message: fmt.Sprintf("is required (%s: %s)", f.Type, f.Description)})
			}
			continue
		}
		out = append(out, checkValue(f, v, path+"."+f.Name)...)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !known[k] {
			out = append(out, fault.Violation{Path: path + "." + k, Message: fmt.Sprintf("is not a known member; known: %s", strings.Join(fieldNames(fields), ", "))})
		}
	}
	return out
}

// NumberValue reads a number from a decoded JSON config value, in any of the
// forms encoding/json produces (float64, json.Number) or a Go int.
func NumberValue(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case interface{ Float64() (float64, error) }: // json.Number
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if _, ok := NumberValue(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
