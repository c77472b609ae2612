package supervisorapp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ErrSupervisorHasChildren is returned for deleting a supervisor that is
// another supervisor's parent: the children's reviews and escalations would
// climb to nothing.
var ErrSupervisorHasChildren = fmt.Errorf("supervisorapp: supervisor has children: %w", fault.ErrConflict)

// NotFound is the error for a supervisor that does not exist, worded once:
// the store answers it for an unknown id, and the read use cases for a
// supervisor hidden from a session-limited caller, so the two cannot be told
// apart. It matches supervisor.ErrSupervisorNotFound.
func NotFound(id string) error {
	return fault.Newf(supervisor.ErrSupervisorNotFound, "supervisor %q does not exist; GET /api/supervisors (MCP: list_supervisors) lists the supervisors", id)
}

// quotedList writes ids as "a", "b" and "c".
func quotedList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = strconv.Quote(id)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
