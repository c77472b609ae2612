package journalapp

import "crypto/ed25519"

// GetPublicKey returns the key that verifies the server's checkpoints, for
// offline verification of exports.
type GetPublicKey struct{ pub ed25519.PublicKey }

// NewGetPublicKey returns the use case.
func NewGetPublicKey(pub ed25519.PublicKey) *GetPublicKey { return &GetPublicKey{pub: pub} }

// Handle returns the public key.
func (uc *GetPublicKey) Handle() ed25519.PublicKey { return uc.pub }
