package plugins_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/plugins"
	"github.com/yukta/yukta/domain/fault"
)

// TestAnswerValidatorNamesEachField: an answer that breaks its input's
// schema is refused with one violation per value at fault, each named by
// its path inside the answer (a missing member by its own name), worded
// without the server's file names; an answer that fits passes.
func TestAnswerValidatorNamesEachField(t *testing.T) {
	t.Parallel()
	var schema map[string]any
	if err := json.Unmarshal([]byte(`{"type":"object","required":["name","count","urgent"],"properties":{
		"name":{"type":"string","minLength":2},
		"count":{"type":"integer","minimum":1},
		"tags":{"type":"array","items":{"type":"string"}},
		"to":{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}},
		"urgent":{"type":"boolean"}}}`), &schema); err != nil {
		t.Fatal(err)
	}
	v := plugins.AnswerValidator{}
	if err := v.Validate(schema, map[string]any{"name": "Ada", "count": 3, "urgent": true, "tags": []any{"a"}, "to": map[string]any{"city": "Pune"}}); err != nil {
		t.Fatalf("a fitting answer: %v", err)
	}
	err := v.Validate(schema, map[string]any{"name": "A", "count": 0, "tags": []any{"a", 2}, "to": map[string]any{}})
	var ve *fault.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("a bad answer: %v, want a *fault.ValidationError", err)
	}
	got := map[string]string{}
	for _, x := range ve.Violations {
		got[x.Path] = x.Message
		if strings.Contains(x.Message, "file://") || strings.Contains(x.Message, "answer.json") {
			t.Errorf("%s: %q names the server's files", x.Path, x.Message)
		}
	}
	want := []string{"count", "name", "tags[1]", "to.city", "urgent"}
	var paths []string
	for _, p := range want {
		if _, ok := got[p]; ok {
			paths = append(paths, p)
		}
	}
	if !reflect.DeepEqual(paths, want) || len(got) != len(want) {
		t.Fatalf("violations %v, want exactly the paths %v", got, want)
	}
	if !strings.Contains(got["count"], "minimum") || got["urgent"] != "is required" || !strings.Contains(got["tags[1]"], "string") {
		t.Errorf("messages: %v", got)
	}
	// A value that is not an object at all is refused as a whole.
	err = v.Validate(schema, "yes")
	if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Path != "" {
		t.Fatalf("a string for an object: %#v", err)
	}
}
