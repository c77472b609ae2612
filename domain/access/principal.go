package access

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// ErrForbidden is what every refused operation matches with errors.Is. Edges
// answer it with 403 (HTTP) or a permission error (MCP). It is a kind of its
// own because no fault kind fits: the request is valid, the thing exists,
// and retrying with a stronger key would succeed.
var ErrForbidden = fmt.Errorf("access: forbidden: %w", fault.ErrForbidden)

// ForbiddenError says which operation was refused to whom, and why. It
// matches ErrForbidden.
type ForbiddenError struct {
	// Actor is the caller's actor string ("key:ci"); empty when the caller
	// is not an authenticated principal.
	Actor string
	// Role is the caller's role.
	Role Role
	// Op is the operation refused.
	Op Operation
	// Need is the least role Op needs; zero for an operation outside the table.
	Need Role
	// Sessions is the caller's session list when the refusal is a write that
	// names no session of it; nil otherwise.
	Sessions []string
}

func (e *ForbiddenError) Error() string {
	switch {
	case !e.Role.Valid():
		return fmt.Sprintf("the caller is not authenticated; present an API key whose role may %s", e.Op.does())
	case !e.Op.Valid():
		return fmt.Sprintf("%s asked to %s; that operation is not in the permission table, so it is denied to every key", e.Actor, e.Op.does())
	case e.Sessions != nil:
		return fmt.Sprintf("%s is limited to the sessions %s and cannot %s outside them; name one of its sessions, or use a key without a session list",
			e.Actor, strings.Join(e.Sessions, ", "), e.Op.does())
	case e.Role == Worker && e.Need != Worker:
		return workerOnly(e.Actor, e.Op.does(), rolesFrom(e.Need))
	default:
		return fmt.Sprintf("%s has the role %s and cannot %s; use a key with the role %s", e.Actor, e.Role, e.Op.does(), rolesFrom(e.Need))
	}
}

// Unwrap makes errors.Is(err, ErrForbidden) true.
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// workerOnly is the refusal of a WORKER key asked to do what it may not:
// what it asked, what it may do, and the roles to use instead.
func workerOnly(actor, does, roles string) string {
	return fmt.Sprintf("%s has the role WORKER and cannot %s: a WORKER key may only %s, through the worker API; use a key with the role %s",
		actor, does, WorkTasks.does(), roles)
}

// RefuseWorker is the refusal (matching ErrForbidden) of a WORKER key at a
// door that is not the worker API and has no one operation of the table
// (does says what it asked: "use MCP"). It is nil for every other
// principal: their door checks their role per operation.
func RefuseWorker(p Principal, does string) error {
	if p.role != Worker || p.supervisor != "" {
		return nil
	}
	return fault.Newf(ErrForbidden, "%s", workerOnly(p.Actor(), does, rolesFrom(Viewer)))
}

// rolesFrom lists min and the roles above it: "OPERATOR or ADMIN"; for
// WORKER, which has none above it, "WORKER".
func rolesFrom(min Role) string {
	if !min.Ordered() {
		return min.String()
	}
	var names []string
	for _, r := range Roles() {
		if r.AtLeast(min) {
			names = append(names, r.String())
		}
	}
	return strings.Join(names, " or ")
}

// Principal is who a request acts as: a named key with a role and, perhaps,
// a list of the sessions it may see. The zero Principal is not authenticated
// and may do nothing.
type Principal struct {
	name      string
	role      Role
	sessions  []string // sorted, no duplicates; nil for every session
	queues    []string // WORKER only: sorted, no duplicates; nil for every queue
	anonymous bool
	// supervisor is set for a supervisor's credential on the agent API:
	// it may do no REST or MCP operation (Can refuses every one); the agent
	// API authorizes it by the supervisor's own allowedCommands and units.
	supervisor string
}

// The actor strings recorded with every command, event and stored change.
const (
	actorKeyPrefix        = "key:"
	actorAnonymous        = "anonymous"
	actorSupervisorPrefix = "supervisor:"
	actorWorkerPrefix     = "worker:"
)

// SupervisorPrincipal is the caller of the agent API that presented the
// credential of supervisor id. Its actor is "supervisor:<id>".
func SupervisorPrincipal(id string) Principal {
	return Principal{name: id, role: Viewer, sessions: []string{}, supervisor: id}
}

// Supervisor returns the supervisor id of an agent API caller ("" for a
// key or the anonymous principal).
func (p Principal) Supervisor() string { return p.supervisor }

// namePattern is what a key name may be. It keeps actor strings short and
// safe to print in logs and URLs.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName reports whether s may name a key.
func ValidName(s string) bool { return namePattern.MatchString(s) }

const (
	msgName     = "must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (for example ci-bot)"
	msgRole     = "must be " + roleList
	msgSessions = "needs at least one session id; leave the list out to allow every session"
)

// NewPrincipal returns the principal of a named key. sessions limits it to
// those sessions; nil means every session, and an empty non-nil list is
// refused rather than read as either.
func NewPrincipal(name string, role Role, sessions []string) (Principal, error) {
	return NewKeyPrincipal(name, role, sessions, nil)
}

// NewKeyPrincipal is NewPrincipal with a queue list: queues limits a
// WORKER key to the tasks of those queues; nil means every queue, an empty
// non-nil list is refused, and so is any list on a key of another role.
// A WORKER key may carry a session list too (tasks of runs in those
// sessions only).
func NewKeyPrincipal(name string, role Role, sessions, queues []string) (Principal, error) {
	var vs []fault.Violation
	if !ValidName(name) {
		vs = append(vs, fault.Violation{Path: "name", Message: msgName})
	}
	if !role.Valid() {
		vs = append(vs, fault.Violation{Path: "role", Message: msgRole})
	}
	list, msgs := checkSessions(sessions)
	for _, m := range msgs {
		vs = append(vs, fault.Violation{Path: "sessions", Message: m})
	}
	qs, v := queueViolations(role, queues)
	vs = append(vs, v...)
	if len(vs) > 0 {
		return Principal{}, &fault.ValidationError{Subject: "principal", Violations: vs}
	}
	return Principal{name: name, role: role, sessions: list, queues: qs}, nil
}

// queueViolations checks a key's queue list for its role, with the
// violations at "queues". A valid role other than WORKER may carry none.
func queueViolations(role Role, queues []string) ([]string, []fault.Violation) {
	if queues != nil && role.Valid() && role != Worker {
		return nil, []fault.Violation{{Path: "queues", Message: msgQueuesNotWorker(role)}}
	}
	qs, msgs := checkQueues(queues)
	var vs []fault.Violation
	for _, m := range msgs {
		vs = append(vs, fault.Violation{Path: "queues", Message: m})
	}
	return qs, vs
}

// checkSessions validates a session list and returns it sorted, or the
// problems found. A nil list stays nil.
func checkSessions(sessions []string) ([]string, []string) {
	if sessions == nil {
		return nil, nil
	}
	if len(sessions) == 0 {
		return nil, []string{msgSessions}
	}
	var msgs []string
	seen := make(map[string]bool, len(sessions))
	for _, id := range sessions {
		switch {
		case !session.ValidID(id):
			msgs = append(msgs, fmt.Sprintf("%q is not a session id; ids are 1 to 64 lowercase letters, digits, '_' or '-', starting with a letter or digit", id))
		case seen[id]:
			msgs = append(msgs, fmt.Sprintf("session %q is listed twice; list it once", id))
		}
		seen[id] = true
	}
	if len(msgs) > 0 {
		return nil, msgs
	}
	list := slices.Clone(sessions)
	slices.Sort(list)
	return list, nil
}

// Anonymous returns the principal of open mode, when no key is configured:
// ADMIN on every session, recorded as the actor "anonymous". Only a server
// bound to loopback may run open.
func Anonymous() Principal { return Principal{role: Admin, anonymous: true} }

// Name returns the key's name; it is empty for the anonymous principal.
func (p Principal) Name() string { return p.name }

// Role returns the principal's role.
func (p Principal) Role() Role { return p.role }

// Anonymous reports whether p is the open-mode principal.
func (p Principal) Anonymous() bool { return p.anonymous }

// Limited reports whether p sees only the sessions of its list.
func (p Principal) Limited() bool { return p.sessions != nil }

// Sessions returns a sorted copy of p's session list, or nil when p sees
// every session.
func (p Principal) Sessions() []string { return slices.Clone(p.sessions) }

// Queues returns a sorted copy of a WORKER principal's queue list, or nil
// when it may take tasks of every queue (and for every other principal,
// which may take none: see MayUseQueue).
func (p Principal) Queues() []string { return slices.Clone(p.queues) }

// MayUseQueue reports whether p may take and answer the tasks of the
// queue: only a WORKER key, and then only a queue of its list, or any
// queue when it has none. Whether p may see the task's session is
// SessionVisible's to say.
func (p Principal) MayUseQueue(name string) bool {
	if p.role != Worker || p.supervisor != "" {
		return false
	}
	return p.queues == nil || slices.Contains(p.queues, name)
}

// CanUseQueues returns nil when p may take and answer the tasks of every
// queue named (a WORKER key whose list holds them all, or that has none),
// and otherwise an error matching ErrForbidden naming the first queue it
// may not use, its place in the list (queues[i]) and the key's list. A
// name that is no queue name is refused as invalid (fault.ErrInvalid,
// ValidateQueueName's text) before that. For a principal that is not a
// WORKER key it is the role's refusal.
func (p Principal) CanUseQueues(queues []string) error {
	if err := p.Can(WorkTasks, ""); err != nil {
		return err
	}
	for i, q := range queues {
		if err := ValidateQueueName(q); err != nil {
			return &fault.ValidationError{Subject: "queue list", Violations: []fault.Violation{{Path: fmt.Sprintf("queues[%d]", i), Message: err.Error()}}}
		}
	}
	for i, q := range queues {
		if !p.MayUseQueue(q) {
			return fault.Newf(ErrForbidden, "%s may take tasks of the queues %s only, and queues[%d] is %q; leave it out, or ask an ADMIN for a key that lists it",
				p.Actor(), strings.Join(p.queues, ", "), i, q)
		}
	}
	return nil
}

// WorkerActor is what a WORKER key is recorded as on what it does through
// the worker API (the lease owner and the actor of the tasks it answers):
// "worker:<key name>"; empty for every other principal.
func (p Principal) WorkerActor() string {
	if p.role != Worker || p.supervisor != "" || p.name == "" {
		return ""
	}
	return actorWorkerPrefix + p.name
}

// IsZero reports whether p is the zero Principal, which may do nothing.
func (p Principal) IsZero() bool { return !p.role.Valid() }

// Actor returns the string recorded as who did something: "key:<name>", or
// "anonymous" in open mode; empty for the zero Principal.
func (p Principal) Actor() string {
	switch {
	case p.supervisor != "":
		return actorSupervisorPrefix + p.supervisor
	case p.anonymous:
		return actorAnonymous
	case p.IsZero():
		return ""
	default:
		return actorKeyPrefix + p.name
	}
}

// String returns p's actor string.
func (p Principal) String() string { return p.Actor() }

// SessionVisible reports whether p may see the session: always for an
// unlimited principal, only for listed sessions otherwise. A caller that
// finds a session is not visible must answer exactly as it does for a
// session that does not exist, so the answer does not reveal that it does.
func (p Principal) SessionVisible(sessionID string) bool {
	if p.IsZero() {
		return false
	}
	if p.sessions == nil {
		return true
	}
	_, found := slices.BinarySearch(p.sessions, sessionID)
	return found
}

// Can reports whether p may perform op on the session sessionID, or on no
// one session when sessionID is empty (listing, plugins, metrics). It
// returns nil when p may, and otherwise:
//
//   - a *ForbiddenError (matching ErrForbidden) when p's role is too low,
//     when p is the zero Principal or op is outside the table, and when p is
//     session-limited and op writes without naming a session of its list;
//   - for a session outside p's list, the error the session store gives for
//     a session that does not exist (matching session.ErrSessionNotFound and
//     fault.ErrNotFound, with the same text), so it cannot be told apart.
//
// The role is checked first, and a role refusal never depends on the
// session, so it reveals nothing about which sessions exist. A read with an
// empty sessionID is allowed to a limited principal; the caller must then
// filter what it returns with SessionVisible.
func (p Principal) Can(op Operation, sessionID string) error {
	if p.supervisor != "" {
		return fault.Newf(ErrForbidden, "%s may use the agent API only; REST and MCP need an API key", p.Actor())
	}
	// Open mode (no keys, loopback only) opens every surface, the worker
	// API included: a first worker runs before anyone writes a key file.
	if !Allowed(p.role, op) && !(p.anonymous && op == WorkTasks) {
		return &ForbiddenError{Actor: p.Actor(), Role: p.role, Op: op, Need: op.MinRole()}
	}
	switch {
	case p.sessions == nil:
		return nil
	case sessionID == "" && op.reads():
		return nil
	case sessionID == "":
		return &ForbiddenError{Actor: p.Actor(), Role: p.role, Op: op, Need: op.MinRole(), Sessions: p.Sessions()}
	case !p.SessionVisible(sessionID):
		return SessionNotFound(sessionID)
	}
	return nil
}

// SessionNotFound returns the error for a session that does not exist,
// worded as the session store words it (adapters/postgres, sessionNotFound).
// Can returns it for a session hidden from a limited principal, so the two
// texts must stay equal byte for byte; the store should build its error with
// this function so that there is one source. An edge that hides a session by
// other means returns it too.
func SessionNotFound(sessionID string) error {
	return session.NotFound(sessionID)
}
