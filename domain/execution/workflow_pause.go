package execution

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// WorkflowPause is a workflow's pause (PAUSE_WORKFLOW): who paused it,
// through which door, since when and why. While it stands no new run of
// the workflow starts, on any door or instance; RESUME_WORKFLOW lifts it.
type WorkflowPause struct {
	SessionID, WorkflowID string
	Actor, Channel        string
	Reason                string
	Since                 time.Time
	// Paused are the runs the pause paused: RESUME_WORKFLOW resumes those
	// (still PAUSED) and no other.
	Paused []string
}

// ErrWorkflowPaused is the kind of a start refused because its workflow is
// paused; it is a conflict (409).
var ErrWorkflowPaused = fmt.Errorf("workflow paused: %w", fault.ErrConflict)

// PausedError refuses a new run of a paused workflow. It is the one text
// every door shows (REST problem detail, MCP tool error, CLI), built here
// from the pause's facts: who, since when, and how to resume.
type PausedError struct {
	Pause WorkflowPause
	// What is refused: "start", "restart" or "retry".
	What string
}

// RefuseStart is the error a start (or restart, what) of the paused
// workflow gets.
func (p WorkflowPause) RefuseStart(what string) error { return &PausedError{Pause: p, What: what} }

func (e *PausedError) Error() string {
	p := e.Pause
	why := ""
	if p.Reason != "" {
		why = ", reason " + strconv.Quote(p.Reason)
	}
	what := e.What
	if what == "" {
		what = "start"
	}
	return fmt.Sprintf("workflow %s of session %s is paused (by %s through %s since %s%s), so no new run of it starts; nothing was %s. "+
		"Resume it with POST /api/sessions/%s/workflows/%s/resume, MCP control_workflow with action RESUME_WORKFLOW, or yukta resume-workflow %s %s",
		p.WorkflowID, p.SessionID, orUnknown(p.Actor), orUnknown(p.Channel), p.Since.UTC().Format(time.RFC3339), why, pastTense(what),
		p.SessionID, p.WorkflowID, p.SessionID, p.WorkflowID)
}

// Unwrap makes errors.Is(err, ErrWorkflowPaused) and fault.ErrConflict true.
func (e *PausedError) Unwrap() error { return ErrWorkflowPaused }

// IsPaused reports whether err refuses a start because the workflow is
// paused, and returns the pause.
func IsPaused(err error) (WorkflowPause, bool) {
	if pe, ok := errors.AsType[*PausedError](err); ok {
		return pe.Pause, true
	}
	return WorkflowPause{}, false
}

func pastTense(what string) string {
	switch what {
	case "restart":
		return "restarted"
	case "retry":
		return "retried"
	}
	return "started"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
