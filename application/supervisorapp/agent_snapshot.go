package supervisorapp

import (
	"context"

	"github.com/yukta/yukta/domain/supervisor"
)

// ReadAgentSnapshot answers an agent's snapshot (REST GET /snapshot, MCP
// get_snapshot): BuildSnapshot of its owned units at the head, the cursor
// to read signals on from.
type ReadAgentSnapshot struct {
	runs      RunDirectory
	holds     HoldStore
	positions OutboxPositions
}

// NewReadAgentSnapshot returns the use case.
func NewReadAgentSnapshot(runs RunDirectory, holds HoldStore, positions OutboxPositions) *ReadAgentSnapshot {
	return &ReadAgentSnapshot{runs: runs, holds: holds, positions: positions}
}

// Handle reads the head first, so nothing committed after the snapshot's
// reads lies before its cursor.
func (uc *ReadAgentSnapshot) Handle(ctx context.Context, sup supervisor.Supervisor) (Snapshot, error) {
	head, err := uc.positions.Head(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	return BuildSnapshot(ctx, uc.runs, uc.holds, sup, head)
}
