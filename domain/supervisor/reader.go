package supervisor

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// reader walks a decoded JSON document and collects every violation, so one
// answer lists every problem a client must fix. Its helpers mirror the
// session document reader: unknown fields are refused with the list of
// allowed ones, and each message names the path and what to send instead.
type reader struct{ vs []fault.Violation }

func (r *reader) add(path, format string, args ...any) {
	r.vs = append(r.vs, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
}

// object checks that v is an object holding only the allowed keys.
func (r *reader) object(v any, path string, allowed ...string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		r.add(path, "must be an object, got %s", kind(v))
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			r.add(jsonvalue.Key(path, k), "unknown field %q; allowed fields: %s", k, strings.Join(allowed, ", "))
		}
	}
	return m
}

// str reads an optional string (required when asked), at most max
// characters long. A missing or null member reads as "".
func (r *reader) str(m map[string]any, key, path string, required bool, max int) string {
	p := jsonvalue.Key(path, key)
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			r.add(p, "is required")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		r.add(p, "must be a string, got %s", kind(v))
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		r.add(p, "must not be empty")
	}
	if n := utf8.RuneCountInString(s); n > max {
		r.add(p, "is %d characters long; the limit is %d", n, max)
	}
	return s
}

// boolean reads an optional boolean; def is used when it is missing.
func (r *reader) boolean(m map[string]any, key, path string, def bool) bool {
	v, ok := m[key]
	if !ok || v == nil {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		r.add(jsonvalue.Key(path, key), "must be true or false, got %s", kind(v))
		return def
	}
	return b
}

// integer reads an optional whole number within [lo, hi]; 0 and false when
// it is missing, null or wrong.
func (r *reader) integer(m map[string]any, key, path string, lo, hi int64) (int64, bool) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false
	}
	return r.intValue(v, jsonvalue.Key(path, key), lo, hi)
}

func (r *reader) intValue(v any, path string, lo, hi int64) (int64, bool) {
	n, ok := wholeNumber(v)
	if !ok {
		if isNumber(v) {
			r.add(path, "must be a whole number from %d to %d, got %s", lo, hi, numberText(v))
		} else {
			r.add(path, "must be a whole number from %d to %d, got %s", lo, hi, kind(v))
		}
		return 0, false
	}
	if n < lo || n > hi {
		r.add(path, "must be from %d to %d, got %d", lo, hi, n)
		return 0, false
	}
	return n, true
}

// strings reads an optional array of strings, at most max entries; nil and
// false when it is missing or null.
func (r *reader) strings(m map[string]any, key, path string, max int) ([]string, bool) {
	p := jsonvalue.Key(path, key)
	v, ok := m[key]
	if !ok || v == nil {
		return nil, false
	}
	a, ok := v.([]any)
	if !ok {
		r.add(p, "must be an array of strings, got %s", kind(v))
		return nil, true
	}
	if len(a) > max {
		r.add(p, "has %d entries; the limit is %d", len(a), max)
		return nil, true
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			r.add(jsonvalue.Index(p, i), "must be a string, got %s", kind(e))
			continue
		}
		out = append(out, s)
	}
	return out, true
}

// wholeNumber reads a JSON number (or a Go number a caller built) as an
// int64 when it is a whole number that fits.
func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		x, err := jsonvalue.Number(n)
		if err != nil {
			return 0, false
		}
		return wholeNumber(x)
	case int:
		return int64(n), true
	case int64:
		return n, true
	case int32:
		return int64(n), true
	case uint64:
		if n > math.MaxInt64 {
			return 0, false
		}
		return int64(n), true
	case float64:
		if n != math.Trunc(n) || math.Abs(n) >= 1<<63 {
			return 0, false
		}
		return int64(n), true
	}
	return 0, false
}

func isNumber(v any) bool {
	switch v.(type) {
	case json.Number, int, int64, int32, uint64, float64:
		return true
	}
	return false
}

func numberText(v any) string {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return fmt.Sprint(v)
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, int, int64, int32, uint64, float64:
		return "a number"
	case map[string]any:
		return "an object"
	case []any, []string:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// decode reads one strict JSON document (see jsonvalue.Decode) and words a
// refusal as a violation of subject.
func decode(data []byte, subject string) (any, error) {
	v, err := jsonvalue.Decode(data, "")
	if err != nil {
		return nil, &fault.ValidationError{Subject: subject, Violations: []fault.Violation{jsonvalue.DocumentViolation(err)}}
	}
	return v, nil
}

// deepCopy copies a decoded JSON value so callers cannot change what a
// value object holds.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(t))
		for i, e := range t {
			a[i] = deepCopy(e)
		}
		return a
	case []string:
		return slices.Clone(t)
	}
	return v
}

// oneOf words a closed list for messages: "a, b or c".
func oneOf[S ~string](vs []S) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	switch len(s) {
	case 0:
		return "(none)"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
