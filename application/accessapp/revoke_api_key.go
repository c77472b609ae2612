package accessapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/access"
)

// RevokeAPIKey deletes a stored key (an ADMIN's act): its secret is
// refused from the commit on, as for a rotation.
type RevokeAPIKey struct {
	tx         Transactor
	configured ConfiguredKeys
	ring       Ring
	now        func() time.Time
}

// NewRevokeAPIKey returns the use case.
func NewRevokeAPIKey(tx Transactor, configured ConfiguredKeys, ring Ring, now func() time.Time) *RevokeAPIKey {
	return &RevokeAPIKey{tx: tx, configured: configured, ring: ring, now: now}
}

// RevokeAPIKeyInput names the key and who revokes it.
type RevokeAPIKeyInput struct {
	Name           string
	Actor, Channel string
}

// Handle deletes the key and appends an APIKeyRevoked event in one
// transaction, and returns the key it revoked. A name no stored key has is
// access.ErrAPIKeyNotFound.
func (uc *RevokeAPIKey) Handle(ctx context.Context, in RevokeAPIKeyInput) (access.APIKey, error) {
	var revoked access.APIKey
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		k, err := st.Keys.Get(ctx, in.Name)
		if errors.Is(err, access.ErrAPIKeyNotFound) {
			return notStored(uc.configured, in.Name)
		}
		if err != nil {
			return err
		}
		if err := st.Keys.Delete(ctx, k.Name()); err != nil {
			return err
		}
		revoked = k
		return st.Audit.APIKeyChanged(ctx, EventAPIKeyRevoked, k.Name(), Change{At: uc.now().UTC(), Actor: in.Actor, Channel: in.Channel}, describe(k))
	})
	if err != nil {
		return access.APIKey{}, fmt.Errorf("revoke API key %q: %w", in.Name, err)
	}
	refresh(ctx, uc.ring)
	return revoked, nil
}
