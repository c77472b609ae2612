package access

import (
	"fmt"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// Role is what a key may do. Roles are ordered: each one may do everything
// the one below it may. The zero Role is not a role and is allowed nothing.
type Role uint8

// The roles, least to most.
const (
	Viewer   Role = iota + 1 // reads
	Operator                 // also starts and controls executions
	Admin                    // also changes sessions, supervisors, credentials, approvals
)

// ErrUnknownRole is returned by ParseRole for a string that names no role.
var ErrUnknownRole = fmt.Errorf("access: unknown role: %w", fault.ErrInvalid)

var roleNames = [...]string{Viewer: "VIEWER", Operator: "OPERATOR", Admin: "ADMIN"}

// Roles returns every role, least to most.
func Roles() []Role { return []Role{Viewer, Operator, Admin} }

// ParseRole reads "VIEWER", "OPERATOR" or "ADMIN" in any letter case, with
// surrounding spaces ignored.
func ParseRole(s string) (Role, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	for _, r := range Roles() {
		if t == roleNames[r] {
			return r, nil
		}
	}
	// Echo only what could be a misspelt role: a long value in a role's place
	// may be a secret written in the wrong field.
	if len(s) <= maxEchoedRole {
		return 0, fault.Newf(ErrUnknownRole, "role %q is not a role; use VIEWER (read only), OPERATOR (also start and control executions) or ADMIN (everything)", s)
	}
	return 0, fault.Newf(ErrUnknownRole, "the role given is not a role; use VIEWER (read only), OPERATOR (also start and control executions) or ADMIN (everything)")
}

// maxEchoedRole is the longest role string ParseRole repeats in its error.
const maxEchoedRole = 10

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool { return r >= Viewer && r <= Admin }

// AtLeast reports whether r is a valid role no lower than min.
func (r Role) AtLeast(min Role) bool { return r.Valid() && min.Valid() && r >= min }

// String returns the role's name as keys and the API spell it ("VIEWER").
func (r Role) String() string {
	if !r.Valid() {
		return fmt.Sprintf("Role(%d)", uint8(r))
	}
	return roleNames[r]
}
