package supervisorapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// Remains are what the runtime keeps under a supervisor's id besides its
// document, its credential (deleted with it) and its holds (released by
// the delete). A supervisor created again under the id inherits none of
// it.
type Remains interface {
	// Forget, in the caller's transaction: deletes the directive ledger
	// and the signal cursor of id and the delegations it sent; retires the
	// idempotency keys its directives gave their effects (ControlKey); expires the
	// OPEN delegations sent to it; moves the deadline of the PENDING
	// reviews that wait for its verdict to now, so the sweeper settles
	// them with their default; and fences its lease off (a new token,
	// expired), so an engine of the deleted supervisor still running
	// anywhere writes nothing more.
	Forget(ctx context.Context, id string) (Forgotten, error)
}

// Forgotten counts what Forget removed or settled.
type Forgotten struct {
	Directives, Cursors, DelegationsSent, DelegationsExpired, ReviewsDue int
	// Keys are the idempotency keys its directives gave commands, starts
	// and settled reviews, retired so the same directive key applies anew.
	Keys int
}

// DeleteSupervisor removes a supervisor and records who did. A supervisor
// that is another's parent stays: its children would escalate to nothing.
// Deleting a holder releases its holds in the same transaction (each
// journaled in its run with the deleting ADMIN as actor, as an ADMIN's
// release is) and then resumes the runs whose last hold it was, through
// Control; everything else kept under its id goes too (Remains), so a
// supervisor created again under the id starts with no holds, no
// directive ledger, no cursor and no delegations or reviews of the old
// one.
type DeleteSupervisor struct {
	tx      Transactor
	control Controller
	now     func() time.Time
}

// NewDeleteSupervisor returns the use case. control resumes the runs whose
// last hold the deleted supervisor held.
func NewDeleteSupervisor(tx Transactor, control Controller, now func() time.Time) *DeleteSupervisor {
	return &DeleteSupervisor{tx: tx, control: control, now: now}
}

// DeleteInput names the supervisor and who deletes it.
type DeleteInput struct {
	ID             string
	Actor, Channel string
}

// DeleteResult is what the delete did besides removing the document.
type DeleteResult struct {
	// Released are the holds it ended, oldest first.
	Released []HoldRelease
	// Forgotten counts the rest of what was kept under the id.
	Forgotten Forgotten
}

// releaseBatch is how many held runs one read of the ledger returns while
// a delete releases them all.
const releaseBatch = supervisor.MaxTargetRuns

// Handle deletes the supervisor and appends a SupervisorDeleted event, or
// reports supervisor.ErrSupervisorNotFound, or ErrSupervisorHasChildren
// naming every child.
func (uc *DeleteSupervisor) Handle(ctx context.Context, in DeleteInput) (DeleteResult, error) {
	var res DeleteResult
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		res = DeleteResult{}
		if _, err := st.Supervisors.GetForUpdate(ctx, in.ID); err != nil {
			return err
		}
		all, err := st.Supervisors.List(ctx)
		if err != nil {
			return err
		}
		var children []string
		for _, s := range all {
			if s.Supervisor.ParentID() == in.ID {
				children = append(children, s.Supervisor.ID())
			}
		}
		if len(children) > 0 {
			what := "the parent of supervisor"
			if len(children) > 1 {
				what = "the parent of supervisors"
			}
			return fault.Newf(ErrSupervisorHasChildren, "supervisor %q is %s %s; give them another parentId (or none) or delete them first, then delete %q",
				in.ID, what, quotedList(children), in.ID)
		}
		at := uc.now().UTC()
		if res.Released, err = releaseAll(ctx, st.Holds, in, at); err != nil {
			return err
		}
		if res.Forgotten, err = st.Remains.Forget(ctx, in.ID); err != nil {
			return err
		}
		if err := st.Supervisors.Delete(ctx, in.ID); err != nil {
			return err
		}
		var data map[string]any
		if len(res.Released) > 0 {
			ids := make([]string, len(res.Released))
			for i, r := range res.Released {
				ids[i] = r.ExecutionID
			}
			data = map[string]any{"releasedHolds": ids}
		}
		return st.Audit.SupervisorChanged(ctx, EventSupervisorDeleted, in.ID, Change{At: at, Actor: in.Actor, Channel: in.Channel}, data)
	})
	if err != nil {
		return DeleteResult{}, fmt.Errorf("delete supervisor %q: %w", in.ID, err)
	}
	var errs []error
	for i := range res.Released {
		errs = append(errs, resumeReleased(ctx, uc.control, &res.Released[i], "", in.Actor, in.Channel))
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("supervisor %q was deleted: %w", in.ID, err)
	}
	return res, nil
}

// releaseAll ends every hold of the supervisor being deleted, in its
// transaction.
func releaseAll(ctx context.Context, holds HoldLedger, in DeleteInput, at time.Time) ([]HoldRelease, error) {
	var out []HoldRelease
	seen := map[string]bool{}
	for {
		runs, err := holds.HeldRuns(ctx, in.ID, releaseBatch)
		if err != nil || len(runs) == 0 {
			return out, err
		}
		for _, r := range runs {
			if seen[r.ID] {
				return nil, fmt.Errorf("supervisorapp: the hold of %q on execution %s is still listed after its release", in.ID, r.ID)
			}
			seen[r.ID] = true
			rel, err := releaseIn(ctx, holds, releaseRequest{ExecutionID: r.ID, SupervisorID: in.ID, Actor: in.Actor, Channel: in.Channel,
				At: at, By: "the deletion of its holder"})
			switch {
			case errors.Is(err, supervisor.ErrNotHeld):
				// The run finished between the read and the lock: its
				// holds ended with it.
			case err != nil:
				return nil, err
			default:
				out = append(out, rel)
			}
		}
	}
}
