package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// DelegationKind is how a supervisor hands a question to another one.
type DelegationKind string

// The delegation kinds (DESIGN §9).
const (
	// Escalate hands a request up to the sender's parent; the parent
	// receives it as a DELEGATED signal.
	Escalate DelegationKind = "ESCALATE"
	// Consult asks a named supervisor's opinion; it receives it as a
	// CONSULTED signal.
	Consult DelegationKind = "CONSULT"
)

// Valid reports whether k is a known kind.
func (k DelegationKind) Valid() bool { return k == Escalate || k == Consult }

// SignalKind is the kind of the signals a delegation of kind k travels as:
// DELEGATED for ESCALATE, CONSULTED for CONSULT (the request to the target
// and the answer back to the sender alike).
func (k DelegationKind) SignalKind() SignalKind {
	if k == Consult {
		return KindConsulted
	}
	return KindDelegated
}

// DelegationStatus is where a delegation stands.
type DelegationStatus string

// The delegation statuses.
const (
	DelegationOpen     DelegationStatus = "OPEN"
	DelegationAnswered DelegationStatus = "ANSWERED"
	DelegationExpired  DelegationStatus = "EXPIRED"
)

// delegationMoves is the transition table: OPEN ends ANSWERED or EXPIRED,
// once.
var delegationMoves = map[DelegationStatus][]DelegationStatus{
	DelegationOpen: {DelegationAnswered, DelegationExpired},
}

// CanMove reports whether a delegation may go from s to next.
func (s DelegationStatus) CanMove(next DelegationStatus) bool {
	return slices.Contains(delegationMoves[s], next)
}

// Limits of a delegation.
const (
	MaxDelegationBytes   = 64 << 10
	MaxDelegationKeyLen  = 128
	DefaultDelegationTTL = time.Hour
)

var (
	// ErrDelegationNotFound: no delegation has the id.
	ErrDelegationNotFound = fmt.Errorf("supervisor: delegation not found: %w", fault.ErrNotFound)
	// ErrDelegationSettled: the delegation was answered already, or
	// expired.
	ErrDelegationSettled = fmt.Errorf("supervisor: delegation already settled: %w", fault.ErrConflict)
)

// DelegationRecord is a delegation's stored form: what storage keeps and
// RestoreDelegation takes back.
type DelegationRecord struct {
	ID       string
	Kind     DelegationKind
	From, To string
	Key      string
	// Payload is the request (ESCALATE) or the question (CONSULT), a JSON
	// document; Answer the target's answer (nil until ANSWERED).
	Payload, Answer json.RawMessage
	Status          DelegationStatus
	CreatedAt       time.Time
	AnsweredAt      time.Time
	Deadline        time.Time
}

// Delegation is one supervisor's request to another: an ESCALATE to its
// parent or a CONSULT of a named supervisor. It is answered once, by its
// target, before its deadline.
type Delegation struct{ r DelegationRecord }

// DelegationSpec is what NewDelegation checks.
type DelegationSpec struct {
	ID   string
	Kind DelegationKind
	// From is the sender; FromParent its parent ("" for a root).
	From, FromParent string
	// To is the CONSULT target (ESCALATE goes to FromParent and leaves it
	// empty or equal to it).
	To string
	// Exists reports whether a supervisor exists (the CONSULT target).
	Exists  func(id string) bool
	Key     string
	Payload json.RawMessage
	Now     time.Time
	// TTL is how long the target has to answer (DefaultDelegationTTL when
	// zero).
	TTL time.Duration
}

// NewDelegation validates a request and returns the OPEN delegation. An
// ESCALATE needs a parent; a CONSULT names an existing supervisor other
// than the sender. The payload is a JSON document of at most
// MaxDelegationBytes; the key is required (it makes the request
// idempotent per sender).
func NewDelegation(s DelegationSpec) (Delegation, error) {
	var v []fault.Violation
	add := func(path, format string, args ...any) {
		v = append(v, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	to := s.To
	switch s.Kind {
	case Escalate:
		if s.FromParent == "" {
			add("kind", "supervisor %s has no parent to ESCALATE to; set parentId, or CONSULT a named supervisor", s.From)
		} else if to != "" && to != s.FromParent {
			add("to", "an ESCALATE goes to the parent (%s); leave to out, or use CONSULT to ask %s", s.FromParent, clip(to))
		}
		to = s.FromParent
	case Consult:
		switch {
		case strings.TrimSpace(to) == "":
			add("to", "a CONSULT names the supervisor it asks")
		case to == s.From:
			add("to", "a supervisor cannot CONSULT itself")
		case s.Exists == nil || !s.Exists(to):
			add("to", "no supervisor has id %q", clip(to))
		}
	default:
		add("kind", "%q is not a delegation kind; use ESCALATE or CONSULT", clip(string(s.Kind)))
	}
	switch {
	case strings.TrimSpace(s.Key) == "":
		add("key", "is required: the same key sent again finds the same delegation")
	case utf8.RuneCountInString(s.Key) > MaxDelegationKeyLen:
		add("key", "is longer than %d characters", MaxDelegationKeyLen)
	}
	if p := docViolation(s.Payload); p != "" {
		add("payload", "%s", p)
	}
	if len(v) > 0 {
		return Delegation{}, &fault.ValidationError{Subject: "delegation", Violations: v}
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultDelegationTTL
	}
	return Delegation{r: DelegationRecord{ID: s.ID, Kind: s.Kind, From: s.From, To: to, Key: s.Key,
		Payload: slices.Clone(s.Payload), Status: DelegationOpen, CreatedAt: s.Now, Deadline: s.Now.Add(ttl)}}, nil
}

// docViolation says what is wrong with a payload or answer ("" when
// nothing is).
func docViolation(b json.RawMessage) string {
	switch {
	case len(b) == 0:
		return "is required (any JSON value)"
	case len(b) > MaxDelegationBytes:
		return fmt.Sprintf("is %d bytes; at most %d", len(b), MaxDelegationBytes)
	}
	// The strict rules of every JSON value (no NUL, no lone surrogate,
	// no repeated key, ...): PostgreSQL's jsonb must be able to keep it.
	if err := jsonvalue.Validate(b, ""); err != nil {
		if je, ok := errors.AsType[*jsonvalue.Error](err); ok && je.Path != "" {
			return "at " + je.Path + ": " + je.Reason
		} else if ok {
			return je.Reason
		}
		return "is not one valid JSON value"
	}
	return ""
}

// RestoreDelegation rebuilds a stored delegation.
func RestoreDelegation(r DelegationRecord) Delegation { return Delegation{r: r} }

// Record returns the stored form.
func (d Delegation) Record() DelegationRecord { return d.r }

// ID returns the id.
func (d Delegation) ID() string { return d.r.ID }

// Kind returns the kind.
func (d Delegation) Kind() DelegationKind { return d.r.Kind }

// From returns the sender.
func (d Delegation) From() string { return d.r.From }

// To returns the target.
func (d Delegation) To() string { return d.r.To }

// Key returns the sender's idempotency key.
func (d Delegation) Key() string { return d.r.Key }

// Payload returns the request.
func (d Delegation) Payload() json.RawMessage { return d.r.Payload }

// Answer returns the answer (nil until ANSWERED).
func (d Delegation) Answer() json.RawMessage { return d.r.Answer }

// Status returns the status.
func (d Delegation) Status() DelegationStatus { return d.r.Status }

// Deadline returns when an OPEN delegation stops taking an answer.
func (d Delegation) Deadline() time.Time { return d.r.Deadline }

// AnsweredAt returns when it was answered (zero until then).
func (d Delegation) AnsweredAt() time.Time { return d.r.AnsweredAt }

// CreatedAt returns when it was opened.
func (d Delegation) CreatedAt() time.Time { return d.r.CreatedAt }

// Respond records by's answer: only the target answers, once, while the
// delegation is OPEN and before its deadline (a later answer expires it
// and is refused).
func (d *Delegation) Respond(by string, answer json.RawMessage, at time.Time) error {
	if by != d.r.To {
		// Another supervisor's delegation is hidden: not found, in the
		// words of an id that does not exist.
		return DelegationNotFound(d.r.ID)
	}
	if p := docViolation(answer); p != "" {
		return &fault.ValidationError{Subject: "delegation answer", Violations: []fault.Violation{{Path: "answer", Message: p}}}
	}
	if !d.r.Status.CanMove(DelegationAnswered) {
		return fault.Newf(ErrDelegationSettled, "delegation %s is %s; it takes one answer", d.r.ID, d.r.Status)
	}
	if !at.Before(d.r.Deadline) {
		return fault.Newf(ErrDelegationSettled, "delegation %s expired at %s", d.r.ID, d.r.Deadline.UTC().Format(time.RFC3339))
	}
	d.r.Status, d.r.Answer, d.r.AnsweredAt = DelegationAnswered, slices.Clone(answer), at
	return nil
}

// DelegationNotFound is the refusal of a delegation id that does not
// exist, and of a delegation sent to another supervisor: the same words for
// both, so the answer is no oracle.
func DelegationNotFound(id string) error {
	return fault.Newf(ErrDelegationNotFound, "delegation %s does not exist", id)
}

// Expire ends an OPEN delegation past its deadline.
func (d *Delegation) Expire(at time.Time) error {
	if !d.r.Status.CanMove(DelegationExpired) {
		return fault.Newf(ErrDelegationSettled, "delegation %s is %s", d.r.ID, d.r.Status)
	}
	if at.Before(d.r.Deadline) {
		return fault.Newf(ErrDelegationSettled, "delegation %s is open until %s", d.r.ID, d.r.Deadline.UTC().Format(time.RFC3339))
	}
	d.r.Status = DelegationExpired
	return nil
}
