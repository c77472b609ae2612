package supervisor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

// violation is one expected violation: its path, and a part of its message.
type violation struct {
	path string
	has  string
}

// checkViolations fails unless err is a *fault.ValidationError that holds
// every wanted violation, and no violation at another path.
func checkViolations(t *testing.T, err error, want ...violation) {
	t.Helper()
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("error: got %v (%T), want a *fault.ValidationError", err, err)
	}
	if !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("errors.Is(err, fault.ErrInvalid): got false, want true")
	}
	for _, w := range want {
		found := false
		for _, v := range ve.Violations {
			if v.Path == w.path && strings.Contains(v.Message, w.has) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("violation at %q containing %q: not found in\n%s", w.path, w.has, listViolations(ve))
		}
	}
	for _, v := range ve.Violations {
		expected := false
		for _, w := range want {
			if v.Path == w.path {
				expected = true
			}
		}
		if !expected {
			t.Errorf("unexpected violation %s: %s", v.Path, v.Message)
		}
	}
}

func listViolations(ve *fault.ValidationError) string {
	var b strings.Builder
	for _, v := range ve.Violations {
		b.WriteString("  " + v.Path + ": " + v.Message + "\n")
	}
	return b.String()
}

// mustJSON encodes v for a test document.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type obj = map[string]any
type arr = []any

func jsonNumber(s string) json.Number { return json.Number(s) }
