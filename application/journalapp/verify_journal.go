package journalapp

import (
	"context"
	"crypto/ed25519"

	"github.com/yukta/yukta/domain/journal"
)

// Verification is a stored journal's verification and how far the observer
// is behind on the execution.
type Verification struct {
	journal.Result
	// LagEvents counts the execution's outbox events not journaled yet.
	LagEvents int64
}

// VerifyJournal verifies a stored journal against its latest checkpoint and
// the registered keys (current and retired, picked by the checkpoint's key
// id; this instance's key besides): VALID only when the chain holds and a valid
// checkpoint names its tip, UNANCHORED when no valid checkpoint does (the
// execution has not settled, or the observer is behind), INVALID with the
// first bad sequence and why.
type VerifyJournal struct {
	reader JournalReader
	pub    ed25519.PublicKey
	reg    KeyRegistry
}

// NewVerifyJournal returns the use case; pub (this instance's key) and the
// registry's keys verify checkpoints.
func NewVerifyJournal(r JournalReader, pub ed25519.PublicKey, reg KeyRegistry) *VerifyJournal {
	return &VerifyJournal{reader: r, pub: pub, reg: reg}
}

// Handle verifies one execution's journal.
func (uc *VerifyJournal) Handle(ctx context.Context, sessionID, executionID string) (Verification, error) {
	j, err := uc.reader.Journal(ctx, sessionID, executionID)
	if err != nil {
		return Verification{}, err
	}
	lag, err := uc.reader.Lag(ctx, executionID)
	if err != nil {
		return Verification{}, err
	}
	keys := journal.NewKeySet(uc.pub)
	if uc.reg != nil {
		reg, err := uc.reg.Keys(ctx)
		if err != nil {
			return Verification{}, err
		}
		for _, k := range reg {
			keys.Add(k.PublicKey)
		}
	}
	return Verification{Result: journal.VerifyLinesKeys(j.Lines, j.Checkpoint, keys), LagEvents: lag}, nil
}
