package supervisorapp_test

import (
	"encoding/json"
	"testing"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/plugin"
)

// TestRedactorMasksHeadersInAnyCase: an event's headers, however their
// names are cased and however deep they lie, reach a supervisor with the
// secret ones as *** and the others as they were.
func TestRedactorMasksHeadersInAnyCase(t *testing.T) {
	t.Parallel()
	var data map[string]any
	if err := json.Unmarshal([]byte(`{"request":{"headers":{"AUTHORIZATION":"Bearer abc","X-Api-Key":"k1","x-API-key":"k2",
		"Cookie":"s=1","Content-Type":"application/json"},"calls":[{"authorization":"Basic eA==","url":"https://example.com"}]}}`), &data); err != nil {
		t.Fatal(err)
	}
	out, err := supervisorapp.NewRedactor(nil, nil).Redact(t.Context(), executionapp.StoredEvent{Event: executionapp.Event{Data: data}})
	if err != nil {
		t.Fatal(err)
	}
	req := out["request"].(map[string]any)
	h := req["headers"].(map[string]any)
	for _, name := range []string{"AUTHORIZATION", "X-Api-Key", "x-API-key", "Cookie"} {
		if h[name] != plugin.MaskedValue {
			t.Errorf("header %s reached the supervisor as %v, want %s", name, h[name], plugin.MaskedValue)
		}
	}
	if h["Content-Type"] != "application/json" {
		t.Errorf("Content-Type became %v", h["Content-Type"])
	}
	call := req["calls"].([]any)[0].(map[string]any)
	if call["authorization"] != plugin.MaskedValue || call["url"] != "https://example.com" {
		t.Errorf("a header in a list: %v", call)
	}
	// The event itself is not changed.
	if data["request"].(map[string]any)["headers"].(map[string]any)["AUTHORIZATION"] != "Bearer abc" {
		t.Error("Redact changed the event it was given")
	}
}
