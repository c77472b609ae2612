package supervisorapp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ChannelSupervisor is the channel of directives an engine on this server
// sends (the agent API sends with "agent").
const ChannelSupervisor = "supervisor"

// Directive statuses, as a DirectiveResult reports them.
const (
	// DirectiveAccepted: the intake's checks passed and the directive was
	// handed to every run it reaches; Outcomes say how each took it.
	DirectiveAccepted = LedgerAccepted
	// DirectiveRejected: refused before any effect (not allowed, outside
	// the owned units, too many runs, disabled supervisor).
	DirectiveRejected = LedgerRejected
)

// Outcome statuses.
const (
	OutcomeApplied  = "applied"
	OutcomeAccepted = "accepted" // a DRAIN still draining
	OutcomeRejected = "rejected"
	// OutcomeInReview: another supervisor reviews the command; ReviewID
	// names the review, which applies it when it allows it.
	OutcomeInReview = "review"
)

// SubmitDirective is the directive intake: the one use case every engine
// (and the agent API) sends directives through. It checks the directive
// against the supervisor (enabled, allowedCommands, owned units), makes
// its key idempotent per supervisor with a ledger entry, expands its
// target to at most supervisor.MaxTargetRuns runs, and applies it through
// the same use cases REST and MCP use: control commands through Control,
// StartWorkflow through StartExecution, AnswerInput through AnswerInput,
// Hold and Release through the hold ledger (pausing and resuming through
// Control). Every directive is a decision record in the journal of each
// run it reaches: control commands through their command events, the rest
// and every refusal through DirectiveApplied and DirectiveRejected events.
type SubmitDirective struct {
	sups     Reader
	ledger   DirectiveLedger
	runs     RunDirectory
	holds    HoldStore
	control  Controller
	start    Starter
	answer   Answerer
	loops    *LoopGuard
	now      func() time.Time
	claimTTL time.Duration
}

// SubmitDeps are what SubmitDirective needs. ClaimTTL is how long a
// sender holds a key while applying it before another may take over (a
// crash); 0 means DefaultClaimTTL.
type SubmitDeps struct {
	Supervisors Reader
	Ledger      DirectiveLedger
	Runs        RunDirectory
	Holds       HoldStore
	Control     Controller
	Start       Starter
	Answer      Answerer
	// Loops applies the loop bounds to every directive (nil: none).
	Loops    *LoopGuard
	Now      func() time.Time
	ClaimTTL time.Duration
}

// DefaultClaimTTL bounds how long a key waits after its sender died.
const DefaultClaimTTL = 10 * time.Second

// NewSubmitDirective returns the use case.
func NewSubmitDirective(d SubmitDeps) *SubmitDirective {
	if d.ClaimTTL <= 0 {
		d.ClaimTTL = DefaultClaimTTL
	}
	return &SubmitDirective{sups: d.Supervisors, ledger: d.Ledger, runs: d.Runs, holds: d.Holds, control: d.Control,
		start: d.Start, answer: d.Answer, loops: d.Loops, now: d.Now, claimTTL: d.ClaimTTL}
}

// SubmitInput is one directive from one supervisor.
type SubmitInput struct {
	SupervisorID string
	Directive    supervisor.Directive
	// Channel is the door: ChannelSupervisor (the default) for engines on
	// this server, "agent" for the agent API.
	Channel string
	// Fence is the sending engine's lease. When set, a directive from an
	// engine that lost its lease is refused with ErrLeaseLost before it
	// has any effect.
	Fence *Fence
}

// DirectiveResult is the answer to a directive. It is stored with the key,
// so the same key always gets the same answer.
type DirectiveResult struct {
	SupervisorID string    `json:"supervisorId"`
	Key          string    `json:"key"`
	Status       string    `json:"status"`
	Message      string    `json:"message,omitempty"`
	Outcomes     []Outcome `json:"outcomes"`
	// Repeated is set when the key was seen before: this is the answer it
	// got then, and nothing was done again.
	Repeated bool `json:"repeated,omitempty"`
	// Refusal names the kind of a rejection (refused, tooManyRuns,
	// notFound, conflict, invalid).
	Refusal string `json:"refusal,omitempty"`
}

// Outcome is how one run (or node, input, workflow) took a directive.
type Outcome struct {
	ExecutionID        string   `json:"executionId,omitempty"`
	NodeID             string   `json:"nodeId,omitempty"`
	WorkflowID         string   `json:"workflowId,omitempty"`
	InputID            string   `json:"inputId,omitempty"`
	CommandID          string   `json:"commandId,omitempty"`
	Status             string   `json:"status"`
	Message            string   `json:"message,omitempty"`
	ResultExecutionIDs []string `json:"resultExecutionIds,omitempty"`
	ReviewID           string   `json:"reviewId,omitempty"`
}

// step is one unit of work of a directive: a run (with a node for node
// commands), an input's run, or a workflow (StartWorkflow, StopAll).
type step struct {
	ExecutionID string `json:"executionId,omitempty"`
	NodeID      string `json:"nodeId,omitempty"`
	SessionID   string `json:"sessionId,omitempty"`
	WorkflowID  string `json:"workflowId,omitempty"`
	// Missing: the run does not exist (only the server owner's directives
	// get this far with one); it is answered, never journaled.
	Missing bool `json:"missing,omitempty"`
}

// Handle checks, records and applies one directive. A refusal is recorded
// with the sender and returned as the result with an error matching
// supervisor.ErrDirectiveRefused (or ErrTooManyRuns); the same key again
// returns the first answer and has no second effect; the same key with
// another directive is refused with executionapp.ErrKeyReused. An error
// without a result (the database is down) leaves the key open: sending it
// again carries on where the first attempt stopped.
func (uc *SubmitDirective) Handle(ctx context.Context, in SubmitInput) (DirectiveResult, error) {
	if in.Directive.Key() == "" {
		return DirectiveResult{}, fault.Newf(fault.ErrInvalid, "the directive has no key; build it with supervisor.ParseDirective or NewDirective")
	}
	if in.Channel == "" {
		in.Channel = ChannelSupervisor
	}
	for range MaxDirectiveAttempts {
		res, err := uc.attempt(ctx, in)
		if !errors.Is(err, errStartAgain) {
			return res, err
		}
	}
	return DirectiveResult{}, fault.Newf(fault.ErrUnavailable, "the key %q was taken over by another sender %d times while this one applied it; nothing more was done here: send the directive again to get its answer",
		Clip(in.Directive.Key(), 80), MaxDirectiveAttempts)
}

// MaxDirectiveAttempts bounds how often one Handle starts again after
// another sender of the same key took it over (this one was slower than
// the claim's ttl) or was found applying it.
const MaxDirectiveAttempts = 3

// errStartAgain: another sender holds the key's work; the attempt made no
// answer and Handle starts again, which waits for that sender's answer or
// takes the key back.
var errStartAgain = errors.New("supervisorapp: start the directive again")

// attempt is one pass of Handle: read the key, plan or refuse a new one,
// claim it, apply the plan and settle the answer.
func (uc *SubmitDirective) attempt(ctx context.Context, in SubmitInput) (DirectiveResult, error) {
	d := in.Directive
	wire, err := d.MarshalJSON()
	if err != nil {
		return DirectiveResult{}, fmt.Errorf("supervisorapp: encode directive: %w", err)
	}
	sum := sha256.Sum256(wire)
	fp := hex.EncodeToString(sum[:])
	prev, seen, err := uc.ledger.Directive(ctx, in.SupervisorID, d.Key())
	if err != nil {
		return DirectiveResult{}, err
	}
	if seen {
		if prev.Fingerprint != fp {
			return DirectiveResult{}, keyReused(d.Key(), prev)
		}
		if prev.Status != LedgerPending {
			return answer(prev)
		}
	}
	origin, refused, err := uc.loops.admitted(ctx, in, seen) // loop_guard.go
	if err != nil {
		return refused, err
	}
	stored, err := uc.sups.Supervisor(ctx, in.SupervisorID)
	if err != nil {
		return DirectiveResult{}, err
	}
	sup := stored.Supervisor
	entry := LedgerEntry{SupervisorID: in.SupervisorID, Key: d.Key(), Fingerprint: fp, Directive: wire, Status: LedgerPending, Channel: in.Channel}
	if !seen {
		steps, refusal, err := uc.plan(ctx, sup, d)
		if err != nil {
			return DirectiveResult{}, err
		}
		if refusal != nil {
			return uc.reject(ctx, in, entry, refusal)
		}
		if entry.Plan, err = json.Marshal(steps); err != nil {
			return DirectiveResult{}, fmt.Errorf("supervisorapp: encode plan: %w", err)
		}
	}
	claim := rand.Text()
	held, err := uc.claim(ctx, in, entry, claim)
	if err != nil {
		return DirectiveResult{}, err
	}
	if held.Status != LedgerPending {
		return answer(held)
	}
	return uc.carryOut(ctx, in, sup, entry, held.Plan, claim, origin)
}

// carryOut applies a claimed key's stored plan, step by step, keeping the
// claim alive, and settles the answer with the events that journal it.
func (uc *SubmitDirective) carryOut(ctx context.Context, in SubmitInput, sup supervisor.Supervisor, entry LedgerEntry, plan []byte, claim string, origin executionapp.Origin) (DirectiveResult, error) {
	d := in.Directive
	var steps []step
	if err := json.Unmarshal(plan, &steps); err != nil {
		return DirectiveResult{}, fmt.Errorf("supervisorapp: stored plan of %s/%s: %w", in.SupervisorID, d.Key(), err)
	}
	res := DirectiveResult{SupervisorID: in.SupervisorID, Key: d.Key(), Status: DirectiveAccepted, Outcomes: []Outcome{}}
	var events []executionapp.Event
	claimed := uc.now()
	for _, st := range steps {
		if uc.now().Sub(claimed) > uc.claimTTL/3 {
			ok, err := uc.ledger.ExtendClaim(ctx, in.Fence, in.SupervisorID, d.Key(), claim, uc.claimTTL)
			if err != nil {
				return DirectiveResult{}, err
			}
			if !ok {
				// Another sender took the key over (this one was too
				// slow): start again, which waits for its answer or takes
				// the key back. Effects already made are not made twice.
				return DirectiveResult{}, errStartAgain
			}
			claimed = uc.now()
		}
		if out, ok := outsideOwned(sup, d, st); !ok {
			// A key taken over after its sender died applies the plan
			// made then: a run no longer owned now gets nothing (and no
			// record, since it is not the sender's).
			res.Outcomes = append(res.Outcomes, out)
			continue
		}
		out, evs, err := uc.apply(ctx, sup, d, in.Channel, st, origin)
		if err != nil {
			return DirectiveResult{}, err
		}
		res.Outcomes = append(res.Outcomes, out)
		events = append(events, evs...)
	}
	res.Message = summary(d, res.Outcomes)
	entry.Status = LedgerAccepted
	var err error
	if entry.Result, err = json.Marshal(res); err != nil {
		return DirectiveResult{}, fmt.Errorf("supervisorapp: encode result: %w", err)
	}
	final, settled, err := uc.ledger.Settle(ctx, nil, entry, events)
	if err != nil {
		return DirectiveResult{}, err
	}
	if !settled {
		return answer(final)
	}
	return res, nil
}

// outsideOwned checks one step of a stored plan against the units sup owns
// now (ownership may have narrowed since the plan was made); ok is false,
// with the refused outcome, when the step's run lies outside them. A
// Release is never refused here: a held run may always be released, and
// Release itself answers for a run that is not held.
func outsideOwned(sup supervisor.Supervisor, d supervisor.Directive, st step) (Outcome, bool) {
	if st.Missing || st.SessionID == "" || d.Command().Type() == supervisor.Release ||
		sup.OwnsPlace(supervisor.Place{SessionID: st.SessionID, WorkflowID: st.WorkflowID}) {
		return Outcome{}, true
	}
	return Outcome{ExecutionID: st.ExecutionID, NodeID: st.NodeID, Status: OutcomeRejected,
		Message: fmt.Sprintf("supervisor %q no longer owns the unit of this run (session %s); nothing was changed", sup.ID(), st.SessionID)}, false
}

// claim claims the key, or waits while another sender holds it, and
// returns the entry to apply (pending, claimed by this call) or the
// settled answer.
func (uc *SubmitDirective) claim(ctx context.Context, in SubmitInput, e LedgerEntry, claim string) (LedgerEntry, error) {
	wait := 10 * time.Millisecond
	for {
		stored, claimed, err := uc.ledger.Claim(ctx, in.Fence, e, claim, uc.claimTTL)
		switch {
		case err != nil:
			return LedgerEntry{}, err
		case stored.Fingerprint != e.Fingerprint:
			return LedgerEntry{}, keyReused(e.Key, stored)
		case claimed || stored.Status != LedgerPending:
			return stored, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return LedgerEntry{}, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}

// reject records a refusal before any effect, with its sender only: the
// rejected ledger entry is the supervisor's own audit trail
// (ListRefusals), and nothing is written into the runs the directive named,
// which it may not own. One request is at most one entry.
func (uc *SubmitDirective) reject(ctx context.Context, in SubmitInput, e LedgerEntry, refusal error) (DirectiveResult, error) {
	d := in.Directive
	res := DirectiveResult{SupervisorID: in.SupervisorID, Key: d.Key(), Status: DirectiveRejected, Message: refusal.Error(),
		Outcomes: []Outcome{}, Refusal: refusalKind(refusal)}
	e.Status = LedgerRejected
	var err error
	if e.Plan, err = json.Marshal([]step{}); err != nil {
		return DirectiveResult{}, err
	}
	if e.Result, err = json.Marshal(res); err != nil {
		return DirectiveResult{}, fmt.Errorf("supervisorapp: encode result: %w", err)
	}
	stored, settled, err := uc.ledger.Settle(ctx, in.Fence, e, nil)
	if err != nil {
		return DirectiveResult{}, err
	}
	if !settled {
		if stored.Fingerprint != e.Fingerprint {
			return DirectiveResult{}, keyReused(d.Key(), stored)
		}
		if stored.Status == LedgerPending {
			// Another sender of the key found it acceptable and is
			// applying it: its answer is the key's.
			return DirectiveResult{}, errStartAgain
		}
		return answer(stored)
	}
	return res, refusal
}

// Actor is how a supervisor is named as the actor of what it does.
func Actor(supervisorID string) string { return "supervisor:" + supervisorID }

// ControlKey is the idempotency key a directive's effects carry into the
// control and start use cases: one per supervisor and directive key, at
// most execution.MaxKeyLen characters. Control scopes a key to its target
// and action, so one key serves every run a directive reaches; a retry
// after a crash finds the effects already recorded under it.
func ControlKey(supervisorID, key string) string {
	sum := sha256.Sum256([]byte(supervisorID + "\x00" + key))
	return "supervisor:" + supervisorID + "/" + hex.EncodeToString(sum[:16])
}

// isRefusal tells a refusal (recorded as an outcome; the same again gets
// the same answer) from a failure to carry the directive out (the database:
// trying again may work). Engines read it through SortEffect.
func isRefusal(err error) bool {
	for _, k := range []error{fault.ErrInvalid, fault.ErrConflict, fault.ErrNotFound, fault.ErrForbidden} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// summary is a result's message: how many of its outcomes applied, went
// to review (not applied yet: the review applies them if it allows them),
// and were rejected. A DRAIN still draining counts as applied.
func summary(d supervisor.Directive, outs []Outcome) string {
	if len(outs) == 0 {
		return fmt.Sprintf("%s: the target %s names no unfinished run; nothing to do", d.Command().Type(), d.Command().Target())
	}
	var applied, review, rejected int
	for _, o := range outs {
		switch o.Status {
		case OutcomeInReview:
			review++
		case OutcomeRejected:
			rejected++
		default:
			applied++
		}
	}
	return fmt.Sprintf("%s: %d applied, %d in review, %d rejected of %d", d.Command().Type(), applied, review, rejected, len(outs))
}

// The refusal kinds a result records, so the same key rebuilds the same
// error.
const (
	refusedKind     = "refused"
	tooManyRunsKind = "tooManyRuns"
	notFoundKind    = "notFound"
	conflictKind    = "conflict"
	invalidKind     = "invalid"
)

func refusalKind(err error) string {
	switch {
	case errors.Is(err, supervisor.ErrDirectiveRefused):
		return refusedKind
	case errors.Is(err, supervisor.ErrTooManyRuns):
		return tooManyRunsKind
	case errors.Is(err, fault.ErrNotFound):
		return notFoundKind
	case errors.Is(err, fault.ErrConflict):
		return conflictKind
	}
	return invalidKind
}

func refusalError(kind, msg string) error {
	switch kind {
	case refusedKind:
		return fault.Newf(supervisor.ErrDirectiveRefused, "%s", msg)
	case tooManyRunsKind:
		return fault.Newf(supervisor.ErrTooManyRuns, "%s", msg)
	case notFoundKind:
		return fault.Newf(fault.ErrNotFound, "%s", msg)
	case conflictKind:
		return fault.Newf(fault.ErrConflict, "%s", msg)
	}
	return fault.Newf(fault.ErrInvalid, "%s", msg)
}

// answer is the stored answer of a settled key.
func answer(e LedgerEntry) (DirectiveResult, error) {
	var res DirectiveResult
	if err := json.Unmarshal(e.Result, &res); err != nil {
		return DirectiveResult{}, fmt.Errorf("supervisorapp: stored result of %s/%s: %w", e.SupervisorID, e.Key, err)
	}
	res.Repeated = true
	if res.Status == DirectiveRejected {
		return res, refusalError(res.Refusal, res.Message)
	}
	return res, nil
}

func keyReused(key string, first LedgerEntry) error {
	return fault.Newf(executionapp.ErrKeyReused, "the key %q was already used by this supervisor for another directive (%s); send a new key for a different directive",
		key, Clip(string(first.Directive), 200))
}
