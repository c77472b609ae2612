package sessionapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

// ApplySession creates a session or replaces it whole, in one transaction.
type ApplySession struct {
	tx      Transactor
	catalog session.Catalog
	now     func() time.Time
}

// NewApplySession returns the use case.
func NewApplySession(tx Transactor, c session.Catalog, now func() time.Time) *ApplySession {
	return &ApplySession{tx: tx, catalog: c, now: now}
}

// ApplyInput is a session document addressed to a session id.
type ApplyInput struct {
	// ID is the session id from the URL; the document's own sessionId, if
	// any, must equal it. Empty means the document names the session.
	ID       string
	Document []byte
	// Actor and Channel are who applies it and through which door.
	Actor, Channel string
}

// ApplyResult tells what the apply did.
type ApplyResult struct {
	SessionID        string
	Created          bool
	Workflows        []string
	RemovedWorkflows []string
	Warnings         []string
}

// Handle validates the document and stores the session, in one
// transaction. Every violation comes in one answer: the document's shape,
// ids, graph and plugin configs, and secrets the client sent back masked
// (kept from the stored session, or reported when nothing is stored).
// Running executions keep their own snapshot, so replacing a session never
// changes them.
func (uc *ApplySession) Handle(ctx context.Context, in ApplyInput) (ApplyResult, error) {
	id := in.ID
	if id == "" {
		id = session.DocumentID(in.Document)
	}
	var res ApplyResult
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		var prev *session.Session
		if session.ValidID(id) { // else Parse reports the id
			switch p, err := st.Sessions.GetForUpdate(ctx, id); {
			case err == nil:
				prev = &p
			case !errors.Is(err, fault.ErrNotFound):
				return err
			}
		}
		s, warnings, err := session.Parse(in.Document, uc.catalog, session.ParseOptions{ID: in.ID, KeepSecrets: true, Stored: prev})
		if err != nil {
			return err
		}
		res = ApplyResult{SessionID: s.ID(), Workflows: s.WorkflowIDs(), Warnings: warnings}
		ch := Change{At: uc.now(), Actor: in.Actor, Channel: in.Channel}
		created, removed, err := st.Sessions.Put(ctx, s, ch)
		if err != nil {
			return err
		}
		res.Created, res.RemovedWorkflows = created, removed
		return st.Audit.SessionChanged(ctx, EventSessionApplied, s.ID(), ch, map[string]any{
			"created": created, "workflows": s.WorkflowIDs(), "removedWorkflows": removed})
	})
	if err != nil {
		if _, invalid := errors.AsType[*fault.ValidationError](err); invalid {
			return ApplyResult{}, err
		}
		return ApplyResult{}, fmt.Errorf("apply session %q: %w", id, err)
	}
	if res.RemovedWorkflows == nil {
		res.RemovedWorkflows = []string{}
	}
	return res, nil
}
