package supervisor

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
)

// ReviewStatus is where a review stands.
type ReviewStatus string

// The review statuses (docs/supervisors.md draws the table).
const (
	// ReviewPending: a supervisor's verdict is awaited (Asking says whose).
	ReviewPending ReviewStatus = "PENDING"
	// ReviewAwaitingApproval: a verdict asked for an ADMIN's approval.
	ReviewAwaitingApproval ReviewStatus = "AWAITING_APPROVAL"
	// ReviewAllowed: the command may apply and is being applied.
	ReviewAllowed ReviewStatus = "ALLOWED"
	// ReviewApplied: the command was handed to its use case; the outcome
	// says how it went (it may still have been refused by the run's state).
	ReviewApplied ReviewStatus = "APPLIED"
	// ReviewDenied: a verdict or an ADMIN refused the command; it had no
	// effect.
	ReviewDenied ReviewStatus = "DENIED"
)

// ReviewStatuses lists every status.
var ReviewStatuses = []ReviewStatus{ReviewPending, ReviewAwaitingApproval, ReviewAllowed, ReviewApplied, ReviewDenied}

// Valid reports whether s is a known status.
func (s ReviewStatus) Valid() bool { return slices.Contains(ReviewStatuses, s) }

// Settled reports whether nothing more happens to the review.
func (s ReviewStatus) Settled() bool { return s == ReviewApplied || s == ReviewDenied }

// ReviewMove is what moves a review.
type ReviewMove string

// The moves.
const (
	MoveAllow           ReviewMove = "ALLOW"            // a supervisor's verdict
	MoveDeny            ReviewMove = "DENY"             // a supervisor's verdict
	MoveRequireApproval ReviewMove = "REQUIRE_APPROVAL" // a supervisor's verdict
	MoveNoOpinion       ReviewMove = "NO_OPINION"       // a supervisor's verdict: its parent, or the default
	MoveTimeout         ReviewMove = "TIMEOUT"          // the asked supervisor did not answer in time: the default
	MoveApprove         ReviewMove = "APPROVE"          // an ADMIN
	MoveReject          ReviewMove = "REJECT"           // an ADMIN
	MoveApplied         ReviewMove = "APPLIED"          // the command was handed to its use case
)

// reviewNext is the review transition table. A verdict of ALLOW moves on to
// the next reviewer while there is one (staying PENDING); NO_OPINION and
// TIMEOUT resolve to the parent or to the default decision first, so the
// table lists where each final decision leads. A pair without an entry is
// refused.
var reviewNext = map[ReviewStatus]map[ReviewMove]ReviewStatus{
	ReviewPending: {
		MoveAllow: ReviewAllowed, MoveDeny: ReviewDenied, MoveRequireApproval: ReviewAwaitingApproval,
	},
	ReviewAwaitingApproval: {MoveApprove: ReviewAllowed, MoveReject: ReviewDenied},
	ReviewAllowed:          {MoveApplied: ReviewApplied},
}

// ReviewTransitions returns the table, for the docs and their test.
func ReviewTransitions() map[ReviewStatus]map[ReviewMove]ReviewStatus {
	out := make(map[ReviewStatus]map[ReviewMove]ReviewStatus, len(reviewNext))
	for s, m := range reviewNext {
		out[s] = make(map[ReviewMove]ReviewStatus, len(m))
		for k, v := range m {
			out[s][k] = v
		}
	}
	return out
}

// Errors callers branch on.
var (
	// ErrReviewNotFound: no review has the id.
	ErrReviewNotFound = fmt.Errorf("supervisor: review not found: %w", fault.ErrNotFound)
	// ErrCommandDenied: a review refused the command; it had no effect.
	ErrCommandDenied = fmt.Errorf("supervisor: command denied: %w", fault.ErrForbidden)
	// ErrReviewSettled: the review has moved past the step the answer was
	// for (another answer, an ADMIN or the timeout came first).
	ErrReviewSettled = fmt.Errorf("supervisor: review already decided: %w", fault.ErrConflict)
)

// ReviewStep is one line of a review's history: who moved it, how, why.
type ReviewStep struct {
	At     time.Time    `json:"at"`
	By     string       `json:"by"`
	Move   ReviewMove   `json:"move"`
	Reason string       `json:"reason,omitempty"`
	Status ReviewStatus `json:"status"`
	// Asking is the supervisor asked next, when the step asks one.
	Asking string `json:"asking,omitempty"`
}

// Review holds a command on an owned unit until the supervisors that review
// its type have answered: each reviewer in turn (a supervisor that owns the
// unit and lists the type in reviews), a reviewer without an opinion
// replaced by its parent, the root's silence and every timeout settled by
// the configured default. A review that exists passed NewReview or
// RestoreReview.
type Review struct {
	id          string
	key         string
	sessionID   string
	workflowID  string
	executionID string
	nodeID      string
	command     Command
	request     []byte
	actor       string
	channel     string
	reason      string
	reviewers   []string
	next        int // index in reviewers of the next reviewer after the one asked
	asking      string
	timeout     time.Duration
	def         Decision
	deadline    time.Time
	status      ReviewStatus
	steps       []ReviewStep
	outcome     []byte
	createdAt   time.Time
}

// ReviewSpec is a new review.
type ReviewSpec struct {
	ID, Key                                    string
	SessionID, WorkflowID, ExecutionID, NodeID string
	Command                                    Command
	Request                                    []byte // the door's request, replayed when allowed; opaque here
	Actor, Channel, Reason                     string
	Reviewers                                  []string
	Timeout                                    time.Duration
	Default                                    Decision
	At                                         time.Time
}

// NewReview opens a review: PENDING, asking the first reviewer until
// At+Timeout.
func NewReview(s ReviewSpec) (Review, error) {
	var vs []fault.Violation
	bad := func(path, format string, args ...any) {
		vs = append(vs, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if s.ID == "" {
		bad("id", "is required")
	}
	if s.SessionID == "" {
		bad("sessionId", "is required")
	}
	if !s.Command.typ.Valid() {
		bad("command", "is required")
	}
	if len(s.Reviewers) == 0 {
		bad("reviewers", "name at least one supervisor")
	}
	if s.Timeout <= 0 {
		bad("timeout", "must be positive")
	}
	if !s.Default.Final() {
		bad("default", "%q is not ALLOW, DENY or REQUIRE_APPROVAL", s.Default)
	}
	if utf8.RuneCountInString(s.Reason) > MaxReasonLen {
		bad("reason", "is longer than %d characters", MaxReasonLen)
	}
	if len(vs) > 0 {
		return Review{}, &fault.ValidationError{Subject: "review", Violations: vs}
	}
	r := Review{id: s.ID, key: s.Key, sessionID: s.SessionID, workflowID: s.WorkflowID, executionID: s.ExecutionID, nodeID: s.NodeID,
		command: s.Command, request: slices.Clone(s.Request), actor: s.Actor, channel: s.Channel, reason: s.Reason,
		reviewers: slices.Clone(s.Reviewers), next: 1, asking: s.Reviewers[0], timeout: s.Timeout, def: s.Default,
		deadline: s.At.Add(s.Timeout), status: ReviewPending, createdAt: s.At}
	r.steps = []ReviewStep{{At: s.At, By: s.Actor, Move: "REQUEST", Reason: s.Reason, Status: ReviewPending, Asking: r.asking}}
	return r, nil
}

// ReviewRecord is a stored review, for RestoreReview and the store.
type ReviewRecord struct {
	ID, Key                                    string
	SessionID, WorkflowID, ExecutionID, NodeID string
	Command                                    Command
	Request                                    []byte
	Actor, Channel, Reason                     string
	Reviewers                                  []string
	Next                                       int
	Asking                                     string
	Timeout                                    time.Duration
	Default                                    Decision
	Deadline                                   time.Time
	Status                                     ReviewStatus
	Steps                                      []ReviewStep
	Outcome                                    []byte
	CreatedAt                                  time.Time
}

// RestoreReview rebuilds a stored review. Only storage adapters call it.
func RestoreReview(r ReviewRecord) Review {
	return Review{id: r.ID, key: r.Key, sessionID: r.SessionID, workflowID: r.WorkflowID, executionID: r.ExecutionID, nodeID: r.NodeID,
		command: r.Command, request: r.Request, actor: r.Actor, channel: r.Channel, reason: r.Reason, reviewers: r.Reviewers,
		next: r.Next, asking: r.Asking, timeout: r.Timeout, def: r.Default, deadline: r.Deadline, status: r.Status,
		steps: r.Steps, outcome: r.Outcome, createdAt: r.CreatedAt}
}

// Record returns the review as the store keeps it.
func (r Review) Record() ReviewRecord {
	return ReviewRecord{ID: r.id, Key: r.key, SessionID: r.sessionID, WorkflowID: r.workflowID, ExecutionID: r.executionID, NodeID: r.nodeID,
		Command: r.command, Request: slices.Clone(r.request), Actor: r.actor, Channel: r.channel, Reason: r.reason,
		Reviewers: slices.Clone(r.reviewers), Next: r.next, Asking: r.asking, Timeout: r.timeout, Default: r.def, Deadline: r.deadline,
		Status: r.status, Steps: slices.Clone(r.steps), Outcome: slices.Clone(r.outcome), CreatedAt: r.createdAt}
}

// ID returns the review's id (also the approval's id).
func (r Review) ID() string { return r.id }

// Key returns the idempotency key of the reviewed command ("" for none).
func (r Review) Key() string { return r.key }

// SessionID returns the session of the reviewed command.
func (r Review) SessionID() string { return r.sessionID }

// WorkflowID returns the workflow of the reviewed command.
func (r Review) WorkflowID() string { return r.workflowID }

// ExecutionID returns the run the command acts on ("" for a start or a
// STOP_ALL).
func (r Review) ExecutionID() string { return r.executionID }

// NodeID returns the node a node command acts on.
func (r Review) NodeID() string { return r.nodeID }

// Command returns the reviewed command.
func (r Review) Command() Command { return r.command }

// Request returns the door's request, replayed when the review allows it.
func (r Review) Request() []byte { return slices.Clone(r.request) }

// Actor returns who sent the command.
func (r Review) Actor() string { return r.actor }

// Channel returns the door it came through.
func (r Review) Channel() string { return r.channel }

// Reason returns the sender's reason.
func (r Review) Reason() string { return r.reason }

// Reviewers returns the supervisors whose verdicts the command needs.
func (r Review) Reviewers() []string { return slices.Clone(r.reviewers) }

// Asking returns the supervisor asked now ("" once no supervisor is asked).
func (r Review) Asking() string { return r.asking }

// Deadline returns when the asked supervisor's time runs out.
func (r Review) Deadline() time.Time { return r.deadline }

// Default returns the decision the review takes when nobody decides.
func (r Review) Default() Decision { return r.def }

// Status returns where the review stands.
func (r Review) Status() ReviewStatus { return r.status }

// Steps returns the review's history, oldest first.
func (r Review) Steps() []ReviewStep { return slices.Clone(r.steps) }

// Outcome returns what applying the command gave (nil before).
func (r Review) Outcome() []byte { return slices.Clone(r.outcome) }

// CreatedAt returns when the command was sent.
func (r Review) CreatedAt() time.Time { return r.createdAt }

// LastStep returns the newest step.
func (r Review) LastStep() ReviewStep { return r.steps[len(r.steps)-1] }

// Denial is the error a denied review's command gets: who denied it and
// why.
func (r Review) Denial() error {
	s := r.LastStep()
	why := s.Reason
	if why == "" {
		why = "no reason given"
	}
	return fault.Newf(ErrCommandDenied, "%s was denied by %s: %s (review %s); nothing was changed", r.command.typ, s.By, why, r.id)
}

// ParentOfFunc returns a supervisor's parent ("" for a root or one that is
// gone).
type ParentOfFunc func(supervisorID string) string

// Answer records supervisorID's verdict. Only the supervisor asked now may
// answer, once, while the review is PENDING (ErrReviewSettled otherwise).
// ALLOW asks the next reviewer, or allows the command after the last one;
// DENY denies it; REQUIRE_APPROVAL parks it for an ADMIN; NO_OPINION asks
// the supervisor's parent, or at the root takes the default decision. A
// new supervisor asked gets the whole timeout from at.
func (r *Review) Answer(supervisorID string, v Verdict, parentOf ParentOfFunc, at time.Time) error {
	if !r.asked(supervisorID) {
		// Not its review: answered as one that does not exist, so an
		// answer tells nothing of it (its state, who it waits for).
		return ReviewNotFound(r.id)
	}
	if r.status != ReviewPending || r.asking != supervisorID {
		return r.stale(supervisorID)
	}
	by := "supervisor:" + supervisorID
	if !v.Final() {
		if p := parentOf(supervisorID); p != "" {
			r.ask(p, at)
			r.steps = append(r.steps, ReviewStep{At: at, By: by, Move: MoveNoOpinion, Reason: v.reason, Status: r.status, Asking: p})
			return nil
		}
		v = DefaultVerdict(r.def, "no supervisor up the chain gave an opinion")
		return r.decide(by, MoveNoOpinion, v, at)
	}
	return r.decide(by, ReviewMove(v.decision), v, at)
}

// Expire takes the default decision for a supervisor that did not answer
// by the deadline. It refuses (ErrReviewSettled) a review that is not
// PENDING or whose deadline is still ahead.
func (r *Review) Expire(at time.Time) error {
	if r.status != ReviewPending {
		return r.stale("")
	}
	if at.Before(r.deadline) {
		return fault.Newf(ErrReviewSettled, "review %s waits for %s until %s", r.id, r.asking, r.deadline.UTC().Format(time.RFC3339))
	}
	v := DefaultVerdict(r.def, fmt.Sprintf("supervisor %s did not answer within %s", r.asking, r.timeout))
	return r.decide("system", MoveTimeout, v, at)
}

// decide applies a final verdict given by (or for) the supervisor asked.
func (r *Review) decide(by string, move ReviewMove, v Verdict, at time.Time) error {
	to := reviewNext[ReviewPending][ReviewMove(v.decision)]
	if v.decision == Allow && r.next < len(r.reviewers) {
		r.ask(r.reviewers[r.next], at)
		r.next++
		r.steps = append(r.steps, ReviewStep{At: at, By: by, Move: move, Reason: v.reason, Status: r.status, Asking: r.asking})
		return nil
	}
	r.status, r.asking = to, ""
	r.steps = append(r.steps, ReviewStep{At: at, By: by, Move: move, Reason: v.reason, Status: to})
	return nil
}

func (r *Review) ask(supervisorID string, at time.Time) {
	r.asking, r.deadline = supervisorID, at.Add(r.timeout)
}

// Approve lets an ADMIN (actor) apply a command a verdict parked.
func (r *Review) Approve(actor, reason string, at time.Time) error {
	return r.admin(MoveApprove, actor, reason, at)
}

// Reject lets an ADMIN (actor) refuse a command a verdict parked.
func (r *Review) Reject(actor, reason string, at time.Time) error {
	return r.admin(MoveReject, actor, reason, at)
}

func (r *Review) admin(m ReviewMove, actor, reason string, at time.Time) error {
	if n := utf8.RuneCountInString(reason); n > MaxReasonLen {
		return &fault.ValidationError{Subject: "approval", Violations: []fault.Violation{{Path: "reason",
			Message: fmt.Sprintf("is %d characters long; the limit is %d", n, MaxReasonLen)}}}
	}
	to, ok := reviewNext[r.status][m]
	if !ok {
		return r.stale("")
	}
	r.status = to
	r.steps = append(r.steps, ReviewStep{At: at, By: actor, Move: m, Reason: reason, Status: to})
	return nil
}

// Applied records what applying the allowed command gave.
func (r *Review) Applied(outcome []byte, at time.Time) error {
	to, ok := reviewNext[r.status][MoveApplied]
	if !ok {
		return r.stale("")
	}
	r.status, r.outcome = to, slices.Clone(outcome)
	r.steps = append(r.steps, ReviewStep{At: at, By: "system", Move: MoveApplied, Status: to})
	return nil
}

func (r Review) stale(supervisorID string) error {
	switch {
	case r.status == ReviewPending && supervisorID != "":
		return fault.Newf(ErrReviewSettled, "review %s no longer waits for supervisor %s's verdict; nothing was changed", r.id, supervisorID)
	case r.status == ReviewAwaitingApproval:
		return fault.Newf(ErrReviewSettled, "review %s waits for an ADMIN's approval; decide it with an approval, not a verdict", r.id)
	case r.status == ReviewPending:
		return fault.Newf(ErrReviewSettled, "review %s is waiting for supervisor %s's verdict, not for an approval", r.id, r.asking)
	}
	return fault.Newf(ErrReviewSettled, "review %s is already %s; nothing was changed", r.id, r.status)
}

// asked reports whether the supervisor is one of the review's reviewers,
// or is or was asked for a verdict on it (a parent asked for a reviewer
// without an opinion): only such a supervisor may learn anything of it.
func (r Review) asked(supervisorID string) bool {
	if supervisorID == "" {
		return false
	}
	if r.asking == supervisorID || slices.Contains(r.reviewers, supervisorID) {
		return true
	}
	for _, st := range r.steps {
		if st.Asking == supervisorID {
			return true
		}
	}
	return false
}

// ReviewNotFound is the refusal of a review id that does not exist, and of
// a review the answering supervisor was never asked: the same words for
// both, so the answer is no oracle.
func ReviewNotFound(id string) error {
	return fault.Newf(ErrReviewNotFound, "review %s does not exist", id)
}

// Reviewable reports whether commands of type t can be held for review.
// Hold and Release are a supervisor's own bookkeeping, and AnswerInput is
// answered by whoever the input asks.
func Reviewable(t CommandType) bool {
	return t.Valid() && t != Hold && t != Release && t != AnswerInput
}

// ControlCommand is the directive command a control command is, as a
// review sees it: its type, its run (or node) as target and its arguments.
// ok is false for a command the vocabulary has no type for.
func ControlCommand(c execution.Command, sessionID, workflowID, executionID string) (Command, bool) {
	if c.Scope == execution.ScopeWorkflow && (c.Action == execution.ActionPauseWorkflow || c.Action == execution.ActionResumeWorkflow) {
		t := PauseWorkflow
		if c.Action == execution.ActionResumeWorkflow {
			t = ResumeWorkflow
		}
		return Command{typ: t, target: WorkflowTarget(sessionID, workflowID)}, true
	}
	for _, t := range CommandTypes {
		s := commands[t]
		if s.scope != c.Scope || s.action != c.Action || s.scope == "" {
			continue
		}
		out := Command{typ: t, mode: c.Mode, fromNodeID: c.FromNodeID, immediate: c.Immediate, breakpoint: c.Breakpoint}
		switch s.fam {
		case famStopAll:
			out.target = WorkflowTarget(sessionID, workflowID)
		case famNode:
			out.target, out.nodeID = ExecutionTarget(executionID), c.NodeID
		default:
			out.target = ExecutionTarget(executionID)
		}
		if !slices.Contains(s.args, "mode") {
			out.mode = ""
		}
		return out, true
	}
	return Command{}, false
}

// StartCommand is a start as a review sees it.
func StartCommand(sessionID, workflowID string, payload any) Command {
	return Command{typ: StartWorkflow, target: WorkflowTarget(sessionID, workflowID), payload: deepCopy(payload)}
}

// ReviewersOf picks the supervisors that review a command of type t on
// place, in the order they are asked: workflow owners before session
// owners before server owners, by id within each; the sender (a supervisor
// sending a directive) never reviews its own command, and disabled
// supervisors review nothing.
func ReviewersOf(sups []Supervisor, t CommandType, place Place, sender string) []string {
	type cand struct {
		rank int
		id   string
	}
	var cs []cand
	for _, s := range sups {
		if !s.enabled || !s.ReviewsCommand(t) || "supervisor:"+s.id == sender || !s.OwnsPlace(place) {
			continue
		}
		cs = append(cs, cand{rank: s.ownRank(place), id: s.id})
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.id
	}
	return out
}

// ownRank is how closely s owns place: 0 through a workflow unit, 1 a
// session, 2 the server (3: not at all).
func (s Supervisor) ownRank(p Place) int {
	best := 3
	for _, u := range s.owns {
		if !u.Covers(p) {
			continue
		}
		switch u.Kind() {
		case UnitWorkflow:
			best = min(best, 0)
		case UnitSession:
			best = min(best, 1)
		default:
			best = min(best, 2)
		}
	}
	return best
}

// ParseCommand reads a command in its wire form (Command.MarshalJSON), as
// a directive's command object is read.
func ParseCommand(data []byte) (Command, error) {
	doc, err := decode(data, "command")
	if err != nil {
		return Command{}, err
	}
	r := &reader{}
	c := r.command(doc, "command")
	if len(r.vs) > 0 {
		return Command{}, &fault.ValidationError{Subject: "command", Violations: r.vs}
	}
	return c, nil
}
