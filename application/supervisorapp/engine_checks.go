package supervisorapp

import (
	"context"
	"errors"
	"fmt"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
	"github.com/yukta/yukta/domain/supervisor"
)

// SettingReservedSlots names the server setting that sizes the reserved
// slot pool, as messages name it.
const SettingReservedSlots = "--reserved-supervisor-slots (YUKTA_RESERVED_SUPERVISOR_SLOTS)"

// EngineChecks are what saving a supervisor checks against this server
// besides its document: a workflow supervisor's session and workflow
// exist, and its maxConcurrent fits the reserved slot pool.
type EngineChecks struct {
	// Workflows reads the workflow a workflow supervisor names; nil
	// checks nothing of it.
	Workflows executionapp.WorkflowReader
	// ReservedSlots is the size of the reserved slot pool
	// (--reserved-supervisor-slots); 0 means supervisor runs share the
	// --max-running slots, and maxConcurrent has no bound here.
	ReservedSlots int
	// Sessions reads the sessions the supervisor owns, for the warnings
	// about those that do not exist; nil warns of none.
	Sessions SessionGetter
}

// UseEngineChecks makes every apply fit c. The server always sets it.
func (uc *ApplySupervisor) UseEngineChecks(c EngineChecks) { uc.engines = &c }

// check lists what of sup this server refuses, each at its setting's path
// with the next step; an error is a failure to read (the database).
func (c *EngineChecks) check(ctx context.Context, sup supervisor.Supervisor) ([]fault.Violation, error) {
	if c == nil || sup.EngineType() != "workflow" {
		return nil, nil
	}
	cfg, err := sup.WorkflowSettings()
	if err != nil {
		return nil, nil // Parse listed it
	}
	var vs []fault.Violation
	if c.ReservedSlots > 0 && cfg.MaxConcurrent > c.ReservedSlots {
		vs = append(vs, fault.Violation{Path: "engine.settings.maxConcurrent", Message: fmt.Sprintf(
			"is %d, more than the %d reserved slots (%s) this server keeps for supervisor runs; use at most %d (leave it out for %d), or ask the operator to raise %s",
			cfg.MaxConcurrent, c.ReservedSlots, SettingReservedSlots, c.ReservedSlots, supervisor.WorkflowDefaultMaxConcurrent, SettingReservedSlots)})
	}
	if c.Workflows == nil {
		return vs, nil
	}
	_, err = c.Workflows.Workflow(ctx, cfg.SessionID, cfg.WorkflowID)
	switch {
	case err == nil:
	case errors.Is(err, session.ErrSessionNotFound):
		vs = append(vs, fault.Violation{Path: "engine.settings.sessionId", Message: fmt.Sprintf(
			"session %q does not exist; create it with the workflow %q first (PUT /api/sessions/%s, MCP create_session), then save the supervisor",
			cfg.SessionID, cfg.WorkflowID, cfg.SessionID)})
	case errors.Is(err, session.ErrWorkflowNotFound):
		vs = append(vs, fault.Violation{Path: "engine.settings.workflowId", Message: fmt.Sprintf(
			"workflow %q does not exist in session %q; GET /api/sessions/%s lists its workflows: name one, or add it to the session first",
			cfg.WorkflowID, cfg.SessionID, cfg.SessionID)})
	default:
		return nil, err
	}
	return vs, nil
}
