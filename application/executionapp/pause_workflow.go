package executionapp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// The workflow pause (PAUSE_WORKFLOW, RESUME_WORKFLOW): Control's two
// workflow-scope commands besides STOP_ALL. See docs/control.md.

// pausesWorkflow reports whether c pauses or resumes a whole workflow.
func pausesWorkflow(c execution.Command) bool {
	return c.Scope == execution.ScopeWorkflow && (c.Action == execution.ActionPauseWorkflow || c.Action == execution.ActionResumeWorkflow)
}

// pauseWorkflow stores the workflow's pause and pauses its active runs, in
// the command's transaction and under the workflow's exclusive start lock:
// a start either committed its run before (and is paused here) or reads the
// pause after. A workflow already paused keeps its first pause (who, since
// when) and the command changes nothing.
func (uc *Control) pauseWorkflow(ctx context.Context, st Stores, in ControlInput) (string, []string, error) {
	c := in.Command
	p, paused, err := st.Pauses.Lock(ctx, in.SessionID, in.WorkflowID)
	if err != nil {
		return "", nil, err
	}
	if paused {
		return fmt.Sprintf("workflow %s was already paused by %s since %s; nothing was changed", in.WorkflowID, p.Actor,
			p.Since.UTC().Format(time.RFC3339)), nil, nil
	}
	now := uc.now()
	ids, err := st.Executions.Active(ctx, in.SessionID, in.WorkflowID)
	if err != nil {
		return "", nil, err
	}
	var runs []string
	if len(ids) > 0 {
		w, err := newWork(ctx, st, ids, now)
		if err != nil {
			return "", nil, err
		}
		w.actor, w.channel = c.Actor, c.Channel
		for _, id := range ids {
			ex := w.execs[id]
			if ex == nil || ex.Status().Terminal() || ex.Status() == execution.Paused {
				continue // a run paused on its own stays its owner's to resume
			}
			if err := ex.Pause(); err != nil {
				return "", nil, err
			}
			if err := w.reconcile(ctx, id); err != nil {
				return "", nil, err
			}
			runs = append(runs, id)
		}
		if err := w.finish(ctx, uc.runs); err != nil {
			return "", nil, err
		}
	}
	slices.Sort(runs)
	if err := st.Pauses.Put(ctx, execution.WorkflowPause{SessionID: in.SessionID, WorkflowID: in.WorkflowID, Actor: c.Actor,
		Channel: c.Channel, Reason: c.Reason, Since: now, Paused: runs}); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("workflow %s paused: %d active execution(s) paused, and no new run of it starts until RESUME_WORKFLOW",
		in.WorkflowID, len(runs)), runs, nil
}

// resumeWorkflow lifts the workflow's pause and resumes the runs the pause
// paused that are still PAUSED: not the runs someone paused on their own,
// and not a run a supervisor holds (its holders release it). A workflow
// that is not paused changes nothing.
func (uc *Control) resumeWorkflow(ctx context.Context, st Stores, in ControlInput) (string, []string, error) {
	c := in.Command
	p, paused, err := st.Pauses.Lock(ctx, in.SessionID, in.WorkflowID)
	if err != nil {
		return "", nil, err
	}
	if !paused {
		if _, err := uc.workflows.Workflow(ctx, in.SessionID, in.WorkflowID); err != nil {
			return "", nil, err // neither paused nor in the session: not found
		}
		return fmt.Sprintf("workflow %s is not paused; nothing was changed", in.WorkflowID), nil, nil
	}
	if err := st.Pauses.Delete(ctx, in.SessionID, in.WorkflowID); err != nil {
		return "", nil, err
	}
	var resumed, held []string
	if len(p.Paused) > 0 {
		w, err := newWork(ctx, st, p.Paused, uc.now())
		if err != nil {
			return "", nil, err
		}
		w.actor, w.channel = c.Actor, c.Channel
		for _, id := range p.Paused {
			ex := w.execs[id]
			if ex == nil || ex.Status() != execution.Paused {
				continue // ended, deleted, or resumed meanwhile
			}
			if uc.holds != nil {
				if err := uc.holds.CheckResume(ctx, id); err != nil {
					if !isRefusal(err) {
						return "", nil, err
					}
					held = append(held, id)
					continue
				}
			}
			requeued, err := uc.admission.Resume(ctx, st, ex)
			if err == nil && !requeued {
				err = ex.Resume()
			}
			if err != nil {
				return "", nil, err
			}
			if err := w.reconcile(ctx, id); err != nil {
				return "", nil, err
			}
			resumed = append(resumed, id)
		}
		if err := w.finish(ctx, uc.runs); err != nil {
			return "", nil, err
		}
	}
	msg := fmt.Sprintf("workflow %s resumed: new runs start again; %d execution(s) its pause had paused resumed", in.WorkflowID, len(resumed))
	if len(held) > 0 {
		msg += fmt.Sprintf("; %s stay paused: a supervisor holds them (list_holds)", strings.Join(held, ", "))
	}
	return msg, resumed, nil
}
