package accessapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/yukta/yukta/domain/access"
)

// RotateAPIKey gives a stored key a new secret (an ADMIN's act); the old
// secret is refused from the commit on, on this instance before the answer
// and on the others as soon as they are told (LISTEN/NOTIFY, with a
// periodic re-read behind it).
type RotateAPIKey struct {
	tx         Transactor
	configured ConfiguredKeys
	ring       Ring
	random     io.Reader
	now        func() time.Time
}

// NewRotateAPIKey returns the use case.
func NewRotateAPIKey(tx Transactor, configured ConfiguredKeys, ring Ring, random io.Reader, now func() time.Time) *RotateAPIKey {
	return &RotateAPIKey{tx: tx, configured: configured, ring: ring, random: random, now: now}
}

// RotateAPIKeyInput names the key and who rotates it.
type RotateAPIKeyInput struct {
	Name           string
	Actor, Channel string
}

// Handle draws the new secret and, in one transaction, replaces the key's
// hash and appends an APIKeyRotated event. A name no stored key has is
// access.ErrAPIKeyNotFound; an expired key is refused (fault.ErrConflict).
func (uc *RotateAPIKey) Handle(ctx context.Context, in RotateAPIKeyInput) (IssuedAPIKey, error) {
	var out IssuedAPIKey
	at := uc.now()
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		old, err := st.Keys.Get(ctx, in.Name)
		if errors.Is(err, access.ErrAPIKeyNotFound) {
			return notStored(uc.configured, in.Name)
		}
		if err != nil {
			return err
		}
		k, tok, err := old.Rotate(uc.random, at, in.Actor, in.Channel)
		if err != nil {
			return err
		}
		if err := st.Keys.Replace(ctx, k); err != nil {
			return err
		}
		out = IssuedAPIKey{Token: tok, Key: k}
		return st.Audit.APIKeyChanged(ctx, EventAPIKeyRotated, k.Name(), Change{At: k.RotatedAt(), Actor: in.Actor, Channel: in.Channel}, describe(k))
	})
	if err != nil {
		return IssuedAPIKey{}, fmt.Errorf("rotate API key %q: %w", in.Name, err)
	}
	refresh(ctx, uc.ring)
	return out, nil
}
