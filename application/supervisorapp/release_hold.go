package supervisorapp

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// EventHoldReleased records, in the run, that a hold ended other than by
// its holder's Release: an ADMIN released it (ReleaseHold), or its holder
// was deleted (DeleteSupervisor). It is a decision record in the run's
// journal, with the ADMIN as actor.
const EventHoldReleased = "HoldReleased"

// HoldLedger is the hold ledger bound to one supervisor transaction
// (Stores.Holds): an ADMIN's release and a holder's delete change it under
// the supervisor lock, so neither races a change of the holder.
type HoldLedger interface {
	// ChangeHolds locks the run's ledger, calls change with it and the
	// run, and stores what change returns with the events it returns. A
	// run that does not exist is ErrExecutionNotFound.
	ChangeHolds(ctx context.Context, executionID string,
		change func(h supervisor.RunHolds, run RunInfo) (supervisor.RunHolds, []executionapp.Event, error)) (supervisor.RunHolds, error)
	// HeldRuns returns the unfinished runs a supervisor holds, oldest hold
	// first, at most limit.
	HeldRuns(ctx context.Context, supervisorID string, limit int) ([]RunInfo, error)
}

// ReleaseHold is how an ADMIN ends any supervisor's hold on a run (REST
// DELETE /api/sessions/{s}/executions/{e}/holds/{supervisor}, MCP
// release_hold, yukta holds release). The release is journaled in the run
// (HoldReleased, the ADMIN as actor) in the ledger's transaction; when it
// was the last hold and the holds paused the run, the run resumes through
// Control as the holder's own Release resumes it (holdControl).
type ReleaseHold struct {
	tx      Transactor
	control Controller
	now     func() time.Time
}

// NewReleaseHold returns the use case.
func NewReleaseHold(tx Transactor, control Controller, now func() time.Time) *ReleaseHold {
	return &ReleaseHold{tx: tx, control: control, now: now}
}

// ReleaseHoldInput names the hold and who releases it.
type ReleaseHoldInput struct {
	SessionID, ExecutionID, SupervisorID string
	// Reason is why, recorded in the journal (optional).
	Reason         string
	Actor, Channel string
}

// HoldRelease is what became of a released hold.
type HoldRelease struct {
	SessionID, ExecutionID, SupervisorID string
	// HeldSince and HoldReason are the hold's ledger line.
	HeldSince  time.Time
	HoldReason string
	// Remaining are the holds the run still has.
	Remaining []supervisor.HoldEntry
	// Resumed: it was the last hold of a run the holds paused, and the run
	// resumed (CommandID is the RESUME).
	Resumed   bool
	CommandID string
	Message   string

	effect supervisor.HoldEffect
}

// Handle releases the hold. A run that does not exist in the session is
// ErrExecutionNotFound; a supervisor that does not hold it is
// supervisor.ErrNotHeld, naming the holders.
func (uc *ReleaseHold) Handle(ctx context.Context, in ReleaseHoldInput) (HoldRelease, error) {
	if utf8.RuneCountInString(in.Reason) > supervisor.MaxReasonLen {
		return HoldRelease{}, &fault.ValidationError{Subject: "hold release", Violations: []fault.Violation{{Path: "reason",
			Message: fmt.Sprintf("is %d characters long; the limit is %d", utf8.RuneCountInString(in.Reason), supervisor.MaxReasonLen)}}}
	}
	if !executionapp.ValidID(in.ExecutionID) {
		return HoldRelease{}, executionNotFound(in.ExecutionID)
	}
	var rel HoldRelease
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		var err error
		rel, err = releaseIn(ctx, st.Holds, releaseRequest{SessionID: in.SessionID, ExecutionID: in.ExecutionID, SupervisorID: in.SupervisorID,
			Reason: in.Reason, Actor: in.Actor, Channel: in.Channel, At: uc.now().UTC(), By: "an ADMIN"})
		return err
	})
	if err != nil {
		return HoldRelease{}, fmt.Errorf("release the hold of supervisor %q on execution %s: %w", in.SupervisorID, in.ExecutionID, err)
	}
	if err := resumeReleased(ctx, uc.control, &rel, in.Reason, in.Actor, in.Channel); err != nil {
		return rel, err
	}
	return rel, nil
}

// releaseRequest is one hold to end, by whom and why.
type releaseRequest struct {
	SessionID, ExecutionID, SupervisorID string
	Reason, Actor, Channel               string
	At                                   time.Time
	// By is who ends it, in the journaled message ("an ADMIN", "the
	// deletion of its holder").
	By string
}

// releaseIn ends one hold in the caller's transaction and journals it. A
// run of another session than r.SessionID (when set) is not found.
func releaseIn(ctx context.Context, holds HoldLedger, r releaseRequest) (HoldRelease, error) {
	rel := HoldRelease{SessionID: r.SessionID, ExecutionID: r.ExecutionID, SupervisorID: r.SupervisorID}
	next, err := holds.ChangeHolds(ctx, r.ExecutionID, func(h supervisor.RunHolds, run RunInfo) (supervisor.RunHolds, []executionapp.Event, error) {
		if r.SessionID != "" && run.SessionID != r.SessionID {
			return h, nil, executionNotFound(r.ExecutionID)
		}
		line, _ := h.HeldBy(r.SupervisorID)
		next, effect, err := h.Release(r.SupervisorID, run.Status)
		if err != nil {
			return h, nil, err
		}
		rel.SessionID, rel.HeldSince, rel.HoldReason, rel.effect = run.SessionID, line.Since(), line.Reason(), effect
		msg := fmt.Sprintf("the hold of supervisor %q was released by %s", r.SupervisorID, r.By)
		switch {
		case effect == supervisor.ResumeRun:
			msg += "; it was the last hold: the run resumes"
		case next.Held():
			msg += "; the run stays held by the others"
		}
		rel.Message = msg
		data := map[string]any{"supervisorId": r.SupervisorID, "heldSince": line.Since().UTC().Format(time.RFC3339Nano),
			"holdReason": line.Reason(), "message": msg}
		if strings.TrimSpace(r.Reason) != "" {
			data["reason"] = r.Reason
		}
		ev := executionapp.Event{Type: EventHoldReleased, At: r.At, SessionID: run.SessionID, WorkflowID: run.WorkflowID,
			ExecutionID: run.ID, Actor: r.Actor, Channel: r.Channel, Data: data}
		return next, []executionapp.Event{ev}, nil
	})
	if err != nil {
		return HoldRelease{}, err
	}
	rel.Remaining = next.Entries()
	return rel, nil
}

// resumeReleased resumes, through Control, a run whose last hold rel
// ended, when the holds had paused it.
func resumeReleased(ctx context.Context, control Controller, rel *HoldRelease, reason, actor, channel string) error {
	if rel.effect != supervisor.ResumeRun {
		return nil
	}
	if reason == "" {
		reason = rel.Message
	}
	id, refusal, err := holdControl(ctx, control, holdEffect{SessionID: rel.SessionID, ExecutionID: rel.ExecutionID,
		Action: execution.ActionResume, Reason: reason, Actor: actor, Channel: channel})
	if err != nil {
		return fmt.Errorf("the hold of supervisor %q on execution %s was released, but the run did not resume; RESUME it with control: %w",
			rel.SupervisorID, rel.ExecutionID, err)
	}
	rel.CommandID = id
	if refusal != "" {
		rel.Message += " (not resumed: " + refusal + ")"
		return nil
	}
	rel.Resumed = true
	return nil
}

// holdEffect is the pause or resume a hold transition calls for.
type holdEffect struct {
	SessionID, ExecutionID string
	Action                 execution.Action
	Reason, Cause, Key     string
	Actor, Channel         string
}

// holdControl carries a hold transition's effect out on the run through
// Control: the PAUSE of a first hold, the RESUME after the last release
// (a holder's Release, an ADMIN's release, the holder's deletion). A
// refusal (the run moved on meanwhile) comes back as its text, with no
// error.
func holdControl(ctx context.Context, control Controller, e holdEffect) (commandID, refusal string, err error) {
	res, err := control.Handle(ctx, executionapp.ControlRequest{SessionID: e.SessionID, ExecutionID: e.ExecutionID,
		Scope: execution.ScopeExecution, Action: string(e.Action), Reason: e.Reason, Cause: e.Cause, Key: e.Key,
		Actor: e.Actor, Channel: e.Channel})
	if err != nil && !isRefusal(err) {
		return "", "", err
	}
	if err != nil {
		return res.CommandID, err.Error(), nil
	}
	return res.CommandID, "", nil
}

// executionNotFound is the answer for a run that does not exist (or is
// not in the session named).
func executionNotFound(id string) error {
	return fault.Newf(executionapp.ErrExecutionNotFound, "Execution not found: %s.", id)
}
