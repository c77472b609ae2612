package supervisorapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ApplySupervisor creates a supervisor or replaces it whole, in one
// transaction, and records who did it.
type ApplySupervisor struct {
	tx    Transactor
	check supervisor.ExprChecker
	now   func() time.Time
	// policy is the server's SavePolicy; nil (a use case built without
	// UsePolicy, as in tests of the store) checks none.
	policy *SavePolicy
	// engines are the server's EngineChecks; nil (a use case built
	// without UseEngineChecks) checks none.
	engines *EngineChecks
}

// NewApplySupervisor returns the use case. check compiles the conditions of
// rule documents and of the workflow engine's when; nil checks their
// structure only (which variables and fields they read).
func NewApplySupervisor(tx Transactor, check supervisor.ExprChecker, now func() time.Time) *ApplySupervisor {
	return &ApplySupervisor{tx: tx, check: check, now: now}
}

// UsePolicy makes every apply fit p (the executables process supervisors
// may run, the variables http headers may read): a supervisor that does
// not is refused with the rest of its problems. The server always sets
// it; call it before the first Handle.
func (uc *ApplySupervisor) UsePolicy(p SavePolicy) { uc.policy = &p }

// ApplyInput is a supervisor document addressed to a supervisor id.
type ApplyInput struct {
	// ID is the supervisor id from the URL; the document's own id, if
	// any, must equal it. Empty means the document names the supervisor.
	ID       string
	Document []byte
	// Actor and Channel are who applies it and through which door.
	Actor, Channel string
}

// ApplyResult is the supervisor as stored (every default explicit, secret
// settings masked) and whether the apply created it.
type ApplyResult struct {
	Summary
	Created bool
}

// Handle reads the document strictly (every problem at once, each with its
// path), keeps the stored secret of every secret setting sent back as ***,
// checks the server's SavePolicy and the parent chain against the stored
// supervisors, stores the supervisor and appends a SupervisorApplied event,
// all in one transaction.
func (uc *ApplySupervisor) Handle(ctx context.Context, in ApplyInput) (ApplyResult, error) {
	sup, err := supervisor.Parse(in.Document, supervisor.ParseOptions{ID: in.ID, Check: uc.check})
	if err != nil {
		return ApplyResult{}, err
	}
	// Read before the transaction: supervisor transactions run one at a
	// time, and this is a read of another store.
	engineVs, err := uc.engines.check(ctx, sup)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("apply supervisor %q: %w", sup.ID(), err)
	}
	var res ApplyResult
	err = uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		var prev *Summary
		switch p, err := st.Supervisors.GetForUpdate(ctx, sup.ID()); {
		case err == nil:
			prev = &p
		case !errors.Is(err, supervisor.ErrSupervisorNotFound):
			return err
		}
		all, err := st.Supervisors.List(ctx)
		if err != nil {
			return err
		}
		kept, err := uc.settle(sup, prev, all, engineVs)
		if err != nil {
			return err
		}
		ch := Change{At: uc.now().UTC(), Actor: in.Actor, Channel: in.Channel}
		created, err := st.Supervisors.Put(ctx, kept, ch)
		if err != nil {
			return err
		}
		owns := make([]string, 0, len(kept.Owns()))
		for _, u := range kept.Owns() {
			owns = append(owns, u.String())
		}
		res = ApplyResult{Created: created, Summary: Summary{Supervisor: kept.Masked(), CreatedAt: ch.At, UpdatedAt: ch.At,
			UpdatedBy: ch.Actor, UpdatedVia: ch.Channel}}
		if prev != nil && !created {
			res.CreatedAt = prev.CreatedAt
		}
		// The event says what changed in words a reader of the stream
		// needs; never the settings, which may hold secrets.
		return st.Audit.SupervisorChanged(ctx, EventSupervisorApplied, kept.ID(), ch, map[string]any{
			"created": created, "engine": kept.EngineType(), "owns": owns, "parentId": kept.ParentID(), "enabled": kept.Enabled()})
	})
	if err != nil {
		return ApplyResult{}, fmt.Errorf("apply supervisor %q: %w", sup.ID(), err)
	}
	var sessions SessionGetter
	if uc.engines != nil {
		sessions = uc.engines.Sessions
	}
	if res.Warnings, err = ownsWarnings(ctx, sessions, sup); err != nil {
		return ApplyResult{}, fmt.Errorf("apply supervisor %q: stored, but its owned units could not be read: %w", sup.ID(), err)
	}
	return res, nil
}

// settle fills the secrets sent back masked from prev, checks the policy
// and the parent chain against all (the stored supervisors); their
// problems and vs (the engine checks') are listed in one error.
func (uc *ApplySupervisor) settle(sup supervisor.Supervisor, prev *Summary, all []Summary, vs []fault.Violation) (supervisor.Supervisor, error) {
	var old *supervisor.Supervisor
	if prev != nil {
		old = &prev.Supervisor
	}
	kept, err := sup.KeepSecrets(old)
	if err != nil {
		ve, ok := errors.AsType[*fault.ValidationError](err)
		if !ok {
			return supervisor.Supervisor{}, err
		}
		vs = append(vs, ve.Violations...)
		kept = sup
	}
	if uc.policy != nil {
		vs = append(vs, uc.policy.Check(kept)...)
	}
	parents := make(map[string]string, len(all))
	for _, s := range all {
		parents[s.Supervisor.ID()] = s.Supervisor.ParentID()
	}
	err = supervisor.CheckParent(kept, func(id string) (string, bool) {
		p, ok := parents[id]
		return p, ok
	})
	if err != nil {
		ve, ok := errors.AsType[*fault.ValidationError](err)
		if !ok {
			return supervisor.Supervisor{}, err
		}
		vs = append(vs, ve.Violations...)
	}
	if len(vs) > 0 {
		return supervisor.Supervisor{}, &fault.ValidationError{Subject: "supervisor", Violations: vs}
	}
	return kept, nil
}
