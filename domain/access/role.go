package access

import (
	"fmt"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// Role is what a key may do. VIEWER, OPERATOR and ADMIN are ordered: each
// may do everything the one below it may. WORKER stands outside that
// order: a WORKER key may do the worker operations (take and answer the
// tasks of worker queues) and nothing else, and no other role may do
// those. The zero Role is not a role and is allowed nothing.
type Role uint8

// The roles: the ordered ones least to most, then WORKER.
const (
	Viewer   Role = iota + 1 // reads
	Operator                 // also starts and controls executions
	Admin                    // also changes sessions, supervisors, credentials, approvals
	Worker                   // only takes and answers tasks of worker queues
)

// ErrUnknownRole is returned by ParseRole for a string that names no role.
var ErrUnknownRole = fmt.Errorf("access: unknown role: %w", fault.ErrInvalid)

var roleNames = [...]string{Viewer: "VIEWER", Operator: "OPERATOR", Admin: "ADMIN", Worker: "WORKER"}

// roleList names every role with what it may do, for the messages that
// list them.
const roleList = "VIEWER (read only), OPERATOR (also start and control executions), ADMIN (everything but the worker API) or WORKER (only take and answer tasks of worker queues, through the worker API)"

// Roles returns the ordered roles, least to most. WORKER is not among
// them: it is below none and above none.
func Roles() []Role { return []Role{Viewer, Operator, Admin} }

// AllRoles returns every role: the ordered ones, least to most, then
// WORKER.
func AllRoles() []Role { return []Role{Viewer, Operator, Admin, Worker} }

// ParseRole reads "VIEWER", "OPERATOR", "ADMIN" or "WORKER" in any letter
// case, with surrounding spaces ignored.
func ParseRole(s string) (Role, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	for _, r := range AllRoles() {
		if t == roleNames[r] {
			return r, nil
		}
	}
	// Echo only what could be a misspelt role: a long value in a role's place
	// may be a secret written in the wrong field.
	if len(s) <= maxEchoedRole {
		return 0, fault.Newf(ErrUnknownRole, "role %q is not a role; use %s", s, roleList)
	}
	return 0, fault.Newf(ErrUnknownRole, "the role given is not a role; use %s", roleList)
}

// maxEchoedRole is the longest role string ParseRole repeats in its error.
const maxEchoedRole = 10

// Valid reports whether r is one of the roles, WORKER included.
func (r Role) Valid() bool { return r >= Viewer && r <= Worker }

// Ordered reports whether r is one of the ordered roles VIEWER < OPERATOR
// < ADMIN (not WORKER, not the zero Role).
func (r Role) Ordered() bool { return r >= Viewer && r <= Admin }

// AtLeast reports whether r and min are ordered roles and r is no lower
// than min. WORKER is at least nothing, and nothing is at least WORKER.
func (r Role) AtLeast(min Role) bool { return r.Ordered() && min.Ordered() && r >= min }

// String returns the role's name as keys and the API spell it ("VIEWER").
func (r Role) String() string {
	if !r.Valid() {
		return fmt.Sprintf("Role(%d)", uint8(r))
	}
	return roleNames[r]
}
