package supervisor

import (
	"slices"
	"time"
)

// SignalKind is the kind of a signal, as its envelope names it.
type SignalKind string

// The signal kinds (DESIGN §9).
const (
	// KindEvent: an event on an owned unit.
	KindEvent SignalKind = "EVENT"
	// KindTick: the supervisor's timer (tickSeconds).
	KindTick SignalKind = "TICK"
	// KindReview: a command on an owned unit awaits this supervisor's verdict.
	KindReview SignalKind = "REVIEW"
	// KindStarted: the engine started; the signal carries a snapshot.
	KindStarted SignalKind = "STARTED"
	// KindDelegated: a child supervisor handed a request up (ESCALATE).
	KindDelegated SignalKind = "DELEGATED"
	// KindConsulted: another supervisor asks this one's opinion (CONSULT).
	KindConsulted SignalKind = "CONSULTED"
)

// SignalKinds lists every kind.
var SignalKinds = []SignalKind{KindEvent, KindTick, KindReview, KindStarted, KindDelegated, KindConsulted}

// Valid reports whether k is a known kind.
func (k SignalKind) Valid() bool { return slices.Contains(SignalKinds, k) }

// CatalogName returns the name the engine catalogue uses for the kind
// (Event, Tick, …), "" for an unknown kind.
func (k SignalKind) CatalogName() string {
	switch k {
	case KindEvent:
		return SignalEvent
	case KindTick:
		return SignalTick
	case KindReview:
		return SignalReview
	case KindStarted:
		return SignalStarted
	case KindDelegated:
		return SignalDelegated
	case KindConsulted:
		return SignalConsulted
	}
	return ""
}

// EventTypes lists the event types (DESIGN §6) a rule or a workflow
// engine's events setting may name.
var EventTypes = []string{
	"ExecutionStarted", "ExecutionStatusChanged", "NodeStatusChanged", "BreakpointHit",
	"InputRequested", "InputAnswered", "CommandAccepted", "CommandApplied", "CommandRejected",
	"ReviewRequested", "ReviewDecided", "SessionApplied", "SessionDeleted",
	// The loop bounds refused the supervisor (loop.go): only the
	// supervisor it names receives it.
	"SupervisorLimitReached",
}

// SignalBody is the body of one signal kind. The set is closed: only this
// package defines bodies.
type SignalBody interface {
	Kind() SignalKind
	wire() ordered
}

// EventSignal carries one event of an owned unit (the envelope of DESIGN
// §6), its data already redacted.
type EventSignal struct {
	Seq         int64
	At          time.Time
	Type        string
	SessionID   string
	WorkflowID  string
	ExecutionID string
	NodeID      string
	Actor       string
	Data        map[string]any
}

// TickSignal is the supervisor's timer.
type TickSignal struct {
	At time.Time
}

// ReviewSignal asks for a verdict on a command before it applies. The
// answer goes to POST /reviews/{ReviewID} before Deadline; after it the
// configured default applies.
type ReviewSignal struct {
	ReviewID    string
	Command     Command
	Actor       string
	Channel     string
	SessionID   string
	WorkflowID  string
	ExecutionID string
	// Reason is the sender's reason ("" when none was given).
	Reason   string
	Deadline time.Time
}

// StartedSignal says the engine started; Snapshot is what GET /snapshot
// returns (owned executions, open inputs, hold ledger, cursor).
type StartedSignal struct {
	At       time.Time
	Snapshot any
}

// DelegatedSignal is a request a child supervisor handed up (ESCALATE);
// the answer goes to POST /delegations/{DelegationID}. The answer comes
// back to the child as a DelegatedSignal too, with Answered set, To the
// parent that answered and Answer its answer.
type DelegatedSignal struct {
	DelegationID string
	From         string
	Request      any
	// To, Answered and Answer are set on the answer going back to From.
	To       string
	Answered bool
	Answer   any
}

// ConsultedSignal is another supervisor asking this one's opinion
// (CONSULT); the answer goes to POST /delegations/{DelegationID}. The
// answer comes back to the asker as a ConsultedSignal too, with Answered
// set, To the supervisor asked and Answer its answer.
type ConsultedSignal struct {
	DelegationID string
	From         string
	Payload      any
	// To, Answered and Answer are set on the answer going back to From.
	To       string
	Answered bool
	Answer   any
}

// Kind returns KindEvent.
func (EventSignal) Kind() SignalKind { return KindEvent }

// Kind returns KindTick.
func (TickSignal) Kind() SignalKind { return KindTick }

// Kind returns KindReview.
func (ReviewSignal) Kind() SignalKind { return KindReview }

// Kind returns KindStarted.
func (StartedSignal) Kind() SignalKind { return KindStarted }

// Kind returns KindDelegated.
func (DelegatedSignal) Kind() SignalKind { return KindDelegated }

// Kind returns KindConsulted.
func (ConsultedSignal) Kind() SignalKind { return KindConsulted }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func (e EventSignal) wire() ordered {
	o := ordered{{"seq", e.Seq}, {"at", stamp(e.At)}, {"type", e.Type}, {"sessionId", e.SessionID}}
	o = o.with(e.WorkflowID != "", "workflowId", e.WorkflowID)
	o = o.with(e.ExecutionID != "", "executionId", e.ExecutionID)
	o = o.with(e.NodeID != "", "nodeId", e.NodeID)
	return append(o, member{"actor", e.Actor}, member{"data", nonNilMap(e.Data)})
}

func (t TickSignal) wire() ordered { return ordered{{"at", stamp(t.At)}} }

func (v ReviewSignal) wire() ordered {
	o := ordered{{"reviewId", v.ReviewID}, {"command", v.Command.wire()}, {"actor", v.Actor}, {"channel", v.Channel},
		{"sessionId", v.SessionID}}
	o = o.with(v.WorkflowID != "", "workflowId", v.WorkflowID)
	o = o.with(v.ExecutionID != "", "executionId", v.ExecutionID)
	o = o.with(v.Reason != "", "reason", v.Reason)
	return append(o, member{"deadline", stamp(v.Deadline)})
}

func (s StartedSignal) wire() ordered {
	return ordered{{"at", stamp(s.At)}, {"snapshot", s.Snapshot}}
}

func (d DelegatedSignal) wire() ordered {
	o := ordered{{"delegationId", d.DelegationID}, {"from", d.From}, {"kind", "ESCALATE"}, {"request", d.Request}}
	return answered(o, d.Answered, d.To, d.Answer)
}

func (c ConsultedSignal) wire() ordered {
	o := ordered{{"delegationId", c.DelegationID}, {"from", c.From}, {"kind", "CONSULT"}, {"payload", c.Payload}}
	return answered(o, c.Answered, c.To, c.Answer)
}

// answered adds to and answer to the signal of an answer going back.
func answered(o ordered, ok bool, to string, answer any) ordered {
	if !ok {
		return o
	}
	return append(o, member{"to", to}, member{"answer", answer})
}

// Signal is one signal as a supervisor receives it: its cursor (opaque to
// the supervisor; pass it back as ?after=), its kind and its body. Delivery
// is at least once and ordered per supervisor.
type Signal struct {
	cursor string
	body   SignalBody
}

// NewSignal wraps a body with its cursor.
func NewSignal(cursor string, body SignalBody) Signal { return Signal{cursor: cursor, body: body} }

// Cursor returns the cursor.
func (s Signal) Cursor() string { return s.cursor }

// Kind returns the kind ("" for the zero Signal).
func (s Signal) Kind() SignalKind {
	if s.body == nil {
		return ""
	}
	return s.body.Kind()
}

// Body returns the body.
func (s Signal) Body() SignalBody { return s.body }

// MarshalJSON writes the envelope {"cursor", "kind", "signal"}.
func (s Signal) MarshalJSON() ([]byte, error) {
	var body any = map[string]any{}
	if s.body != nil {
		body = s.body.wire()
	}
	return ordered{{"cursor", s.cursor}, {"kind", string(s.Kind())}, {"signal", body}}.MarshalJSON()
}
