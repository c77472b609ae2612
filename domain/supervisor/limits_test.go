package supervisor

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
)

// TestDirectiveLimitsAtTheirBound: every bound of a directive accepts a
// value exactly at it and refuses one above it, naming the member and the
// bound (lengths count characters, not bytes).
func TestDirectiveLimitsAtTheirBound(t *testing.T) {
	t.Parallel()
	nodes := func(n int) string {
		refs := make([]string, n)
		for i := range refs {
			refs[i] = fmt.Sprintf("e1/n%d", i)
		}
		return strings.Join(refs, ",")
	}
	id := func(n int) string { return "e" + strings.Repeat("1", n-1) }
	tests := []struct {
		member   string
		at, over string // the directive with the member at its bound, and one above
		path     string
		says     string
	}{
		{"key", strings.Repeat("é", MaxKeyLen), strings.Repeat("é", MaxKeyLen+1), "key", fmt.Sprintf("is %d characters long; the limit is %d", MaxKeyLen+1, MaxKeyLen)},
		{"cause", strings.Repeat("x", MaxCauseLen), strings.Repeat("x", MaxCauseLen+1), "cause", fmt.Sprintf("the limit is %d", MaxCauseLen)},
		{"reason", strings.Repeat("ü", MaxReasonLen), strings.Repeat("ü", MaxReasonLen+1), "reason", fmt.Sprintf("the limit is %d", MaxReasonLen)},
		{"node targets", nodes(MaxTargetRuns), nodes(MaxTargetRuns + 1), "command.target", fmt.Sprintf("lists %d nodes; the limit is %d", MaxTargetRuns+1, MaxTargetRuns)},
		{"execution id", id(MaxRefLen), id(MaxRefLen + 1), "command.target", "does not name an execution"},
	}
	build := func(member, v string) string {
		switch member {
		case "key":
			return `{"key":"` + v + `","command":{"type":"PauseWorkflow","target":"execution:e1"}}`
		case "cause", "reason":
			return `{"key":"k","` + member + `":"` + v + `","command":{"type":"PauseWorkflow","target":"execution:e1"}}`
		case "node targets":
			return `{"key":"k","command":{"type":"StopNode","target":"node:` + v + `"}}`
		}
		return `{"key":"k","command":{"type":"PauseWorkflow","target":"execution:` + v + `"}}`
	}
	for _, tt := range tests {
		t.Run(tt.member, func(t *testing.T) {
			t.Parallel()
			if _, err := ParseDirective([]byte(build(tt.member, tt.at))); err != nil {
				t.Fatalf("at the bound: got %v, want it accepted", err)
			}
			_, err := ParseDirective([]byte(build(tt.member, tt.over)))
			var ve *fault.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("one above the bound: got %v, want a validation error", err)
			}
			if len(ve.Violations) != 1 || ve.Violations[0].Path != tt.path || !strings.Contains(ve.Violations[0].Message, tt.says) {
				t.Fatalf("one above the bound: got %+v, want one violation at %s saying %q", ve.Violations, tt.path, tt.says)
			}
		})
	}
	t.Run("runs a target expands to", func(t *testing.T) {
		t.Parallel()
		runs := make([]string, MaxTargetRuns+1)
		for i := range runs {
			runs[i] = fmt.Sprintf("e%d", i)
		}
		if got, err := LimitRuns(Held(), runs[:MaxTargetRuns]); err != nil || len(got) != MaxTargetRuns {
			t.Fatalf("%d runs: got %d, %v; want them accepted", MaxTargetRuns, len(got), err)
		}
		if _, err := LimitRuns(Held(), runs); !errors.Is(err, ErrTooManyRuns) {
			t.Fatalf("%d runs: got %v, want ErrTooManyRuns", MaxTargetRuns+1, err)
		}
	})
}
