package journalapp

import (
	"context"
	"crypto/ed25519"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
)

// KeyHint is how an instance is told to start with a key: the environment
// variable or the key file in the data folder. Bootstrap words it; the use
// case quotes it in its refusals.
type KeyHint struct {
	// Same says how to give an instance the current key.
	Same string
	// Rotate says how to make an instance's key current.
	Rotate string
}

// RegisterKey is what an instance does with its signing key when it starts
// (docs/journal.md, "The key"): the instances on one database sign with one
// current key. The first instance on a database registers its key as
// current. An instance whose key is current starts. An instance with
// another key refuses to start, naming both key ids and the two ways
// forward: the same key as the others, or an explicit rotation. With
// Rotate, its key becomes current and the key before it retired (kept in
// the registry, so old checkpoints still verify). A retired key never
// becomes current again.
type RegisterKey struct {
	reg  KeyRegistry
	hint KeyHint
	now  func() time.Time
}

// NewRegisterKey returns the use case.
func NewRegisterKey(reg KeyRegistry, hint KeyHint, now func() time.Time) *RegisterKey {
	return &RegisterKey{reg: reg, hint: hint, now: now}
}

// Registration is what starting with a key did.
type Registration struct {
	KeyID string
	// Registered: the key was not in the registry and is now, as current.
	Registered bool
	// Retired is the key id the rotation retired ("" when none was).
	Retired string
}

// Handle registers pub, or refuses it with a fault.ErrConflict that says
// what to do.
func (uc *RegisterKey) Handle(ctx context.Context, pub ed25519.PublicKey, rotate bool) (Registration, error) {
	id := journal.KeyID(pub)
	if id == "" {
		return Registration{}, fault.Newf(fault.ErrInvalid, "journal signing key: not an ed25519 key")
	}
	out := Registration{KeyID: id}
	err := uc.reg.WithinKeyLock(ctx, func(ctx context.Context, tx KeyRegistryTx) error {
		out = Registration{KeyID: id}
		keys, err := tx.Keys(ctx)
		if err != nil {
			return err
		}
		var current, own *RegisteredKey
		for i := range keys {
			if keys[i].Status == KeyCurrent {
				current = &keys[i]
			}
			if keys[i].KeyID == id {
				own = &keys[i]
			}
		}
		now := uc.now()
		switch {
		case own != nil && own.Status == KeyCurrent:
			return nil
		case own != nil: // retired
			cur := "none"
			if current != nil {
				cur = current.KeyID
			}
			return fault.Newf(fault.ErrConflict, "journal signing key %s was retired at %s (the current key is %s): a retired key does not sign again. "+
				"Start this instance with the current key (%s), or with a new key and %s",
				id, own.RetiredAt.UTC().Format(time.RFC3339), cur, uc.hint.Same, uc.hint.Rotate)
		case current != nil && !rotate:
			return fault.Newf(fault.ErrConflict, "journal signing key %s is not this database's current key %s: the instances on one database sign with one key. "+
				"Either start this instance with key %s (%s), or make key %s current with %s. "+
				"A rotation retires key %s: the checkpoints it signed still verify, and instances still running with it sign nothing until they restart with the new key",
				id, current.KeyID, current.KeyID, uc.hint.Same, id, uc.hint.Rotate, current.KeyID)
		}
		if current != nil {
			if err := tx.Retire(ctx, current.KeyID, now); err != nil {
				return err
			}
			out.Retired = current.KeyID
		}
		out.Registered = true
		return tx.Add(ctx, RegisteredKey{KeyID: id, PublicKey: pub, Status: KeyCurrent, RegisteredAt: now})
	})
	if err != nil {
		return Registration{}, err
	}
	return out, nil
}
