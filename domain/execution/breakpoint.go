package execution

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// Breakpoint pauses a node before a message that matches it: either a
// payload field (dotted path) equal to a value, or a CEL condition.
type Breakpoint struct {
	Field     string
	Equals    any
	Condition string
}

// NewBreakpoint validates a breakpoint. Exactly one of field or condition
// must be given.
func NewBreakpoint(field string, equals any, hasEquals bool, condition string) (Breakpoint, error) {
	var vs []fault.Violation
	switch {
	case field == "" && condition == "":
		vs = append(vs, fault.Violation{Path: "field", Message: `give either "field" and "equals" (e.g. {"field":"status","equals":"error"}) or "condition" (a CEL expression)`})
	case field != "" && condition != "":
		vs = append(vs, fault.Violation{Path: "condition", Message: `give "field"+"equals" or "condition", not both`})
	case field != "":
		if !hasEquals {
			vs = append(vs, fault.Violation{Path: "equals", Message: `is required with "field": the value that should pause the node`})
		}
		for _, seg := range strings.Split(field, ".") {
			if seg == "" {
				vs = append(vs, fault.Violation{Path: "field", Message: fmt.Sprintf("%q is not a dotted path such as order.status", field)})
				break
			}
		}
		if utf8.RuneCountInString(field) > 256 { // characters, as the API's maxLength counts
			vs = append(vs, fault.Violation{Path: "field", Message: "is longer than 256 characters"})
		}
	default: // condition alone
		if hasEquals {
			vs = append(vs, fault.Violation{Path: "equals", Message: `applies only with "field"; leave it out when you give "condition"`})
		}
		if utf8.RuneCountInString(condition) > 4096 {
			vs = append(vs, fault.Violation{Path: "condition", Message: "is longer than 4096 characters"})
		}
	}
	if len(vs) > 0 {
		return Breakpoint{}, &fault.ValidationError{Subject: "breakpoint", Violations: vs}
	}
	return Breakpoint{Field: field, Equals: equals, Condition: condition}, nil
}

// MatchField reports whether payload's field equals the breakpoint value.
// Numbers compare by value whatever their JSON representation.
func (b Breakpoint) MatchField(payload any) bool {
	v := payload
	for _, seg := range strings.Split(b.Field, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[seg]; !ok {
			return false
		}
	}
	if x, ok := exactNumber(v); ok {
		if y, ok := exactNumber(b.Equals); ok {
			return x == y
		}
	}
	return reflect.DeepEqual(v, b.Equals)
}

// exactNumber reads a number by the one rule of jsonvalue.Number, so
// 9007199254740993 does not equal 9007199254740992 (as float64s they are
// the same) while 100 still equals 100.0.
func exactNumber(v any) (any, bool) {
	var n any
	switch x := v.(type) {
	case json.Number:
		var err error
		if n, err = jsonvalue.Number(x); err != nil {
			return nil, false
		}
	case int:
		n = int64(x)
	case int64, uint64, float64:
		n = x
	default:
		return nil, false
	}
	// An integral double and an int compare as the same number.
	if f, ok := n.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return int64(f), true
	}
	if u, ok := n.(uint64); ok && u <= math.MaxInt64 {
		return int64(u), true
	}
	return n, true
}
