package supervisor

import (
	"fmt"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// UnitKind says what a unit a supervisor owns covers.
type UnitKind string

// The unit kinds.
const (
	// UnitServer is every session of the server: server. Only the server
	// owner's supervisor owns it.
	UnitServer UnitKind = "server"
	// UnitSession is one session and all its workflows: session:<id>.
	UnitSession UnitKind = "session"
	// UnitWorkflow is one workflow of a session: workflow:<session>/<workflow>.
	UnitWorkflow UnitKind = "workflow"
)

// Unit is one thing a supervisor owns. Events on it reach the supervisor,
// and the supervisor's directives may act on its runs. The zero Unit covers
// nothing.
type Unit struct {
	kind       UnitKind
	sessionID  string
	workflowID string
}

// ServerUnit covers the whole server.
func ServerUnit() Unit { return Unit{kind: UnitServer} }

// SessionUnit covers one session.
func SessionUnit(id string) Unit { return Unit{kind: UnitSession, sessionID: id} }

// WorkflowUnit covers one workflow of a session.
func WorkflowUnit(sessionID, workflowID string) Unit {
	return Unit{kind: UnitWorkflow, sessionID: sessionID, workflowID: workflowID}
}

const unitForms = "session:<id>, workflow:<session>/<workflow> or server"

// ParseUnit reads a unit in its wire form.
func ParseUnit(s string) (Unit, error) {
	u, msg := parseUnit(s)
	if msg != "" {
		return Unit{}, fault.Newf(fault.ErrInvalid, "unit %s", msg)
	}
	return u, nil
}

func parseUnit(s string) (Unit, string) {
	if s == string(UnitServer) {
		return ServerUnit(), ""
	}
	prefix, rest, ok := strings.Cut(s, ":")
	switch {
	case !ok:
	case UnitKind(prefix) == UnitSession:
		if !session.ValidID(rest) {
			return Unit{}, fmt.Sprintf("%q does not name a session; use session:<id> with a session id (lowercase letters, digits, '-' and '_')", clip(s))
		}
		return SessionUnit(rest), ""
	case UnitKind(prefix) == UnitWorkflow:
		sid, wid, ok := strings.Cut(rest, "/")
		if !ok || !session.ValidID(sid) || !session.ValidID(wid) {
			return Unit{}, fmt.Sprintf("%q is not workflow:<session>/<workflow> with valid ids", clip(s))
		}
		return WorkflowUnit(sid, wid), ""
	}
	return Unit{}, fmt.Sprintf("%q is not a unit; use %s", clip(s), unitForms)
}

// Kind returns the unit kind ("" for the zero Unit).
func (u Unit) Kind() UnitKind { return u.kind }

// SessionID returns the session of a session or workflow unit.
func (u Unit) SessionID() string { return u.sessionID }

// WorkflowID returns the workflow of a workflow unit.
func (u Unit) WorkflowID() string { return u.workflowID }

// String returns the unit in its wire form.
func (u Unit) String() string {
	switch u.kind {
	case UnitServer:
		return "server"
	case UnitSession:
		return "session:" + u.sessionID
	case UnitWorkflow:
		return "workflow:" + u.sessionID + "/" + u.workflowID
	}
	return ""
}

// Covers reports whether a run or input at p lies in the unit. A place
// without a session is covered only by the server unit.
func (u Unit) Covers(p Place) bool {
	switch u.kind {
	case UnitServer:
		return true
	case UnitSession:
		return p.SessionID != "" && p.SessionID == u.sessionID
	case UnitWorkflow:
		return p.SessionID != "" && p.SessionID == u.sessionID && p.WorkflowID == u.workflowID
	}
	return false
}

// within reports whether every place u covers is also covered by o.
func (u Unit) within(o Unit) bool {
	switch o.kind {
	case UnitServer:
		return true
	case UnitSession:
		return u.kind != UnitServer && u.sessionID == o.sessionID
	}
	return u == o
}
