package journalapp

import (
	"context"
	"crypto/ed25519"
)

// GetPublicKey returns the keys that verify the server's checkpoints, for
// offline verification of exports: this instance's key (the current one,
// once it has started) and every key the registry lists, current and
// retired.
type GetPublicKey struct {
	pub ed25519.PublicKey
	reg KeyRegistry
}

// NewGetPublicKey returns the use case; pub is this instance's key.
func NewGetPublicKey(pub ed25519.PublicKey, reg KeyRegistry) *GetPublicKey {
	return &GetPublicKey{pub: pub, reg: reg}
}

// PublicKeys is the answer: the current key (the registry's; this
// instance's before it has one) and every registered key.
type PublicKeys struct {
	Current ed25519.PublicKey
	Keys    []RegisteredKey
}

// Handle returns the keys.
func (uc *GetPublicKey) Handle(ctx context.Context) (PublicKeys, error) {
	keys, err := uc.reg.Keys(ctx)
	if err != nil {
		return PublicKeys{}, err
	}
	out := PublicKeys{Current: uc.pub, Keys: keys}
	for _, k := range keys {
		if k.Status == KeyCurrent {
			out.Current = k.PublicKey // the same answer on every instance, one still running with a retired key too
		}
	}
	return out, nil
}
