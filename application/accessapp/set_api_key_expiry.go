package accessapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/access"
)

// SetAPIKeyExpiry sets or changes a stored key's expiry (an ADMIN's act):
// from the commit on, the key is refused from the new moment on, on this
// instance before the answer and on the others as soon as they are told,
// as for a rotation. The secret stays.
type SetAPIKeyExpiry struct {
	tx         Transactor
	configured ConfiguredKeys
	ring       Ring
	now        func() time.Time
}

// NewSetAPIKeyExpiry returns the use case.
func NewSetAPIKeyExpiry(tx Transactor, configured ConfiguredKeys, ring Ring, now func() time.Time) *SetAPIKeyExpiry {
	return &SetAPIKeyExpiry{tx: tx, configured: configured, ring: ring, now: now}
}

// SetAPIKeyExpiryInput names the key, its new expiry (ExpiresAt, an RFC
// 3339 time, or TTL, a duration from now: exactly one) and who sets it.
type SetAPIKeyExpiryInput struct {
	Name           string
	ExpiresAt, TTL string
	Actor, Channel string
}

// Handle checks the expiry (access.APIKey.WithExpiry: field-named
// violations, an expired key refused with fault.ErrConflict) and, in one
// transaction, stores it and appends an APIKeyExpiryChanged event. A name
// no stored key has is access.ErrAPIKeyNotFound.
func (uc *SetAPIKeyExpiry) Handle(ctx context.Context, in SetAPIKeyExpiryInput) (access.APIKey, error) {
	var out access.APIKey
	at := uc.now()
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		old, err := st.Keys.Get(ctx, in.Name)
		if errors.Is(err, access.ErrAPIKeyNotFound) {
			return notStored(uc.configured, in.Name)
		}
		if err != nil {
			return err
		}
		k, err := old.WithExpiry(in.ExpiresAt, in.TTL, at)
		if err != nil {
			return err
		}
		if err := st.Keys.SetExpiry(ctx, k); err != nil {
			return err
		}
		out = k
		return st.Audit.APIKeyChanged(ctx, EventAPIKeyExpiryChanged, k.Name(), Change{At: at.UTC(), Actor: in.Actor, Channel: in.Channel}, describe(k))
	})
	if err != nil {
		return access.APIKey{}, fmt.Errorf("set the expiry of API key %q: %w", in.Name, err)
	}
	refresh(ctx, uc.ring)
	return out, nil
}
