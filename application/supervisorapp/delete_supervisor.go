package supervisorapp

import (
	"context"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// DeleteSupervisor removes a supervisor and records who did. A supervisor
// that is another's parent stays: its children would escalate to nothing.
type DeleteSupervisor struct {
	tx  Transactor
	now func() time.Time
}

// NewDeleteSupervisor returns the use case.
func NewDeleteSupervisor(tx Transactor, now func() time.Time) *DeleteSupervisor {
	return &DeleteSupervisor{tx: tx, now: now}
}

// DeleteInput names the supervisor and who deletes it.
type DeleteInput struct {
	ID             string
	Actor, Channel string
}

// Handle deletes the supervisor and appends a SupervisorDeleted event, or
// reports supervisor.ErrSupervisorNotFound, or ErrSupervisorHasChildren
// naming every child.
func (uc *DeleteSupervisor) Handle(ctx context.Context, in DeleteInput) error {
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
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
		if err := st.Supervisors.Delete(ctx, in.ID); err != nil {
			return err
		}
		return st.Audit.SupervisorChanged(ctx, EventSupervisorDeleted, in.ID, Change{At: uc.now().UTC(), Actor: in.Actor, Channel: in.Channel}, nil)
	})
	if err != nil {
		return fmt.Errorf("delete supervisor %q: %w", in.ID, err)
	}
	return nil
}
