package executionapp

import (
	"testing"

	"github.com/yukta/yukta/domain/execution"
)

// TestNewIDIsValid: every id NewID mints is an execution id to the domain's
// rule (execution.ValidID), which every door and store checks.
func TestNewIDIsValid(t *testing.T) {
	for range 100 {
		if id := NewID(); !execution.ValidID(id) {
			t.Fatalf("execution.ValidID(%q) = false for a minted id", id)
		}
	}
}
