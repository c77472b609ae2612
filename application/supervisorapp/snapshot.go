package supervisorapp

import (
	"context"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// Snapshot is what STARTED carries: the owned unfinished runs, their open
// inputs, the holds on them and the cursor the signals go on from.
type Snapshot struct {
	Cursor     string          `json:"cursor"`
	Executions []SnapshotRun   `json:"executions"`
	Inputs     []SnapshotInput `json:"inputs"`
	Holds      []SnapshotHold  `json:"holds"`
}

// SnapshotRun is one owned unfinished run.
type SnapshotRun struct {
	ExecutionID string    `json:"executionId"`
	SessionID   string    `json:"sessionId"`
	WorkflowID  string    `json:"workflowId"`
	Status      string    `json:"status"`
	StartedAt   time.Time `json:"startedAt"`
}

// SnapshotInput is one open input of an owned run.
type SnapshotInput struct {
	InputID     string    `json:"inputId"`
	SessionID   string    `json:"sessionId"`
	WorkflowID  string    `json:"workflowId"`
	ExecutionID string    `json:"executionId"`
	NodeID      string    `json:"nodeId"`
	Prompt      string    `json:"prompt"`
	CreatedAt   time.Time `json:"createdAt"`
}

// SnapshotHold is one line of the hold ledger of an owned run.
type SnapshotHold struct {
	ExecutionID  string    `json:"executionId"`
	SupervisorID string    `json:"supervisorId"`
	Since        time.Time `json:"since"`
	Reason       string    `json:"reason"`
}

// SnapshotLimit caps each list of a snapshot.
const SnapshotLimit = 1000

// BuildSnapshot reads the present of a supervisor's owned units.
func BuildSnapshot(ctx context.Context, runs RunDirectory, holds HoldStore, sup supervisor.Supervisor, cursor supervisor.Position) (Snapshot, error) {
	s := Snapshot{Cursor: supervisor.FormatCursor(cursor), Executions: []SnapshotRun{}, Inputs: []SnapshotInput{}, Holds: []SnapshotHold{}}
	owns := sup.Owns()
	if len(owns) == 0 {
		return s, nil
	}
	active, err := runs.ActiveRuns(ctx, owns, SnapshotLimit)
	if err != nil {
		return Snapshot{}, err
	}
	ids := make([]string, 0, len(active))
	for _, r := range active {
		ids = append(ids, r.ID)
		s.Executions = append(s.Executions, SnapshotRun{ExecutionID: r.ID, SessionID: r.SessionID, WorkflowID: r.WorkflowID,
			Status: string(r.Status), StartedAt: r.StartedAt.UTC()})
	}
	inputs, err := runs.OpenInputs(ctx, owns, SnapshotLimit)
	if err != nil {
		return Snapshot{}, err
	}
	for _, in := range inputs {
		s.Inputs = append(s.Inputs, SnapshotInput{InputID: in.ID, SessionID: in.SessionID, WorkflowID: in.WorkflowID,
			ExecutionID: in.ExecutionID, NodeID: in.NodeID, Prompt: in.Prompt, CreatedAt: in.CreatedAt.UTC()})
	}
	if len(ids) == 0 {
		return s, nil
	}
	ledgers, err := holds.Holds(ctx, ids)
	if err != nil {
		return Snapshot{}, err
	}
	for _, h := range ledgers {
		for _, e := range h.Entries() {
			s.Holds = append(s.Holds, SnapshotHold{ExecutionID: h.ExecutionID(), SupervisorID: e.SupervisorID(),
				Since: e.Since().UTC(), Reason: e.Reason()})
		}
	}
	return s, nil
}
