package supervisor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// MaxDepth is the longest parent chain: a supervisor and at most seven
// ancestors. A no-opinion verdict or an escalation climbs it, so it stays
// short.
const MaxDepth = 8

// ParentOf looks up a stored supervisor: its parent id ("" for a root) and
// whether it exists.
type ParentOf func(id string) (parentID string, ok bool)

// CheckParent checks s's parent chain against the stored supervisors
// before s is saved (created, or changed: s's own stored entry is ignored,
// its new parent counts). It refuses a parent that does not exist, a chain
// that comes back to s (or cycles in the stored data) and a chain deeper
// than MaxDepth, as a *fault.ValidationError on parentId.
func CheckParent(s Supervisor, parentOf ParentOf) error {
	if s.parentID == "" {
		return nil
	}
	chain := []string{s.id}
	for cur := s.parentID; cur != ""; {
		if slices.Contains(chain, cur) {
			path := strings.Join(append(slices.Clone(chain), cur), " -> ")
			if cur == s.id {
				return parentViolation("supervisor %q cannot have parent %q: the chain %s is a cycle; choose a parent that is not %q or one of its descendants",
					s.id, s.parentID, path, s.id)
			}
			return parentViolation("the chain %s cycles at %q among the stored supervisors; fix their parents first", path, cur)
		}
		chain = append(chain, cur)
		if len(chain) > MaxDepth {
			return parentViolation("the chain %s is deeper than %d supervisors; choose a parent nearer the root", strings.Join(chain, " -> "), MaxDepth)
		}
		parent, ok := parentOf(cur)
		if !ok {
			if cur == s.parentID {
				return parentViolation("supervisor %q does not exist; create it first, or leave parentId out for a root", cur)
			}
			return parentViolation("supervisor %q in the chain %s does not exist; fix its child's parent first", cur, strings.Join(chain, " -> "))
		}
		cur = parent
	}
	return nil
}

func parentViolation(format string, args ...any) error {
	return &fault.ValidationError{Subject: "supervisor", Violations: []fault.Violation{{Path: "parentId", Message: fmt.Sprintf(format, args...)}}}
}
