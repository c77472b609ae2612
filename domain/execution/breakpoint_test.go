package execution_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

func TestNewBreakpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		field     string
		equals    any
		hasEquals bool
		condition string
		want      execution.Breakpoint
		wantPaths []string
	}{
		{name: "field and equals", field: "order.status", equals: "error", hasEquals: true,
			want: execution.Breakpoint{Field: "order.status", Equals: "error"}},
		{name: "equals null", field: "status", equals: nil, hasEquals: true, want: execution.Breakpoint{Field: "status"}},
		{name: "equals a number", field: "n", equals: 2.0, hasEquals: true, want: execution.Breakpoint{Field: "n", Equals: 2.0}},
		{name: "condition", condition: `payload.total > 100`, want: execution.Breakpoint{Condition: `payload.total > 100`}},
		{name: "field of 256 characters", field: strings.Repeat("ह", 256), equals: 1.0, hasEquals: true,
			want: execution.Breakpoint{Field: strings.Repeat("ह", 256), Equals: 1.0}},
		{name: "condition of 4096 characters", condition: strings.Repeat("é", 4096), want: execution.Breakpoint{Condition: strings.Repeat("é", 4096)}},
		{name: "neither", wantPaths: []string{"field"}},
		{name: "neither, equals alone", equals: 1.0, hasEquals: true, wantPaths: []string{"field"}},
		{name: "both", field: "a", equals: 1.0, hasEquals: true, condition: "true", wantPaths: []string{"condition"}},
		{name: "field without equals", field: "a", wantPaths: []string{"equals"}},
		{name: "empty segment", field: "a..b", equals: 1.0, hasEquals: true, wantPaths: []string{"field"}},
		{name: "leading dot", field: ".a", equals: 1.0, hasEquals: true, wantPaths: []string{"field"}},
		{name: "trailing dot", field: "a.", equals: 1.0, hasEquals: true, wantPaths: []string{"field"}},
		{name: "just a dot", field: ".", equals: 1.0, hasEquals: true, wantPaths: []string{"field"}},
		{name: "field too long", field: strings.Repeat("a", 257), equals: 1.0, hasEquals: true, wantPaths: []string{"field"}},
		{name: "field: every problem", field: strings.Repeat("a.", 129), wantPaths: []string{"equals", "field", "field"}},
		{name: "condition too long", condition: strings.Repeat("x", 4097), wantPaths: []string{"condition"}},
		{name: "equals with condition", condition: "true", equals: 1.0, hasEquals: true, wantPaths: []string{"equals"}},
		{name: "equals with long condition", condition: strings.Repeat("x", 4097), hasEquals: true, wantPaths: []string{"equals", "condition"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := execution.NewBreakpoint(tt.field, tt.equals, tt.hasEquals, tt.condition)
			if tt.wantPaths == nil {
				if err != nil {
					t.Fatalf("got error %v, want nil", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
				return
			}
			ve, ok := errors.AsType[*fault.ValidationError](err)
			if !ok || ve.Subject != "breakpoint" || !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("got (%+v, %v), want a breakpoint *fault.ValidationError", got, err)
			}
			var paths []string
			for _, v := range ve.Violations {
				paths = append(paths, v.Path)
				if v.Message == "" {
					t.Errorf("%s: got an empty message, want a sentence", v.Path)
				}
			}
			if !slices.Equal(paths, tt.wantPaths) {
				t.Errorf("paths got %v, want %v (%v)", paths, tt.wantPaths, err)
			}
		})
	}
}

func TestMatchField(t *testing.T) {
	t.Parallel()
	decode := func(s string) any {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("decode %s: %v", s, err)
		}
		return v
	}
	var plain any
	if err := json.Unmarshal([]byte(`{"order":{"status":"error","total":100,"lines":[1,2],"meta":{"ok":true,"tag":null}},"n":2.5,"s":"2"}`), &plain); err != nil {
		t.Fatal(err)
	}
	numbered := decode(`{"order":{"status":"error","total":100,"lines":[1,2],"meta":{"ok":true,"tag":null}},"n":2.5,"s":"2"}`)
	tests := []struct {
		name    string
		field   string
		equals  any
		payload any
		want    bool
	}{
		{"string equal", "order.status", "error", plain, true},
		{"string differs", "order.status", "ok", plain, false},
		{"string is not a number", "s", 2.0, plain, false},
		{"number is not a string", "order.total", "100", plain, false},
		{"three levels", "order.meta.ok", true, plain, true},
		{"bool differs", "order.meta.ok", false, plain, false},
		{"null equals null", "order.meta.tag", nil, plain, true},
		{"missing field", "order.missing", nil, plain, false},
		{"missing top level", "nope", "error", plain, false},
		{"missing intermediate", "customer.name", "x", plain, false},
		{"through a string", "order.status.code", "x", plain, false},
		{"through an array", "order.lines.0", 1.0, plain, false},
		{"array value", "order.lines", []any{1.0, 2.0}, plain, true},
		{"object value", "order.meta", map[string]any{"ok": true, "tag": nil}, plain, true},
		{"payload not an object", "a", "x", "a string", false},
		{"payload nil", "a", nil, nil, false},
		{"payload array", "a", nil, []any{map[string]any{"a": nil}}, false},
		{"payload typed map", "a", "x", map[string]string{"a": "x"}, false},
		// Numbers compare by value, whatever their representation.
		{"float64 = float64", "order.total", 100.0, plain, true},
		{"float64 = int", "order.total", 100, plain, true},
		{"float64 = int64", "order.total", int64(100), plain, true},
		{"float64 = json.Number", "order.total", json.Number("100"), plain, true},
		{"float64 = json.Number with exponent", "order.total", json.Number("1e2"), plain, true},
		{"json.Number = float64", "order.total", 100.0, numbered, true},
		{"json.Number = int", "order.total", 100, numbered, true},
		{"json.Number = json.Number written differently", "order.total", json.Number("100.0"), numbered, true},
		{"fraction", "n", 2.5, numbered, true},
		{"fraction differs", "n", 2, plain, false},
		{"json.Number differs", "order.total", json.Number("101"), numbered, false},
		{"json.Number vs string", "s", json.Number("2"), numbered, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bp := execution.Breakpoint{Field: tt.field, Equals: tt.equals}
			if got := bp.MatchField(tt.payload); got != tt.want {
				t.Errorf("Breakpoint{%q, %#v}.MatchField(%v) got %v, want %v", tt.field, tt.equals, tt.payload, got, tt.want)
			}
		})
	}
}

func TestMatchFieldNumbersAreExact(t *testing.T) {
	cases := []struct {
		payload, equals any
		want            bool
	}{
		{json.Number("9007199254740993"), json.Number("9007199254740992"), false},
		{json.Number("9007199254740993"), json.Number("9007199254740993"), true},
		{json.Number("9223372036854775809"), uint64(1<<63 + 1), true},
		{json.Number("100"), json.Number("100.0"), true},
		{int64(100), 100.0, true},
		{json.Number("1.5"), 1.5, true},
		{json.Number("1.5"), json.Number("2"), false},
	}
	for _, c := range cases {
		bp := execution.Breakpoint{Field: "id", Equals: c.equals}
		if got := bp.MatchField(map[string]any{"id": c.payload}); got != c.want {
			t.Errorf("payload %v equals %v: got %v, want %v", c.payload, c.equals, got, c.want)
		}
	}
}
