package authn

import (
	"sync/atomic"

	"github.com/yukta/yukta/domain/access"
)

// Ring is a keyring that a reload of the key file replaces whole, between
// requests: a request authenticates against the set in force when it is
// checked, never a mix of two. A nil *Ring, or one holding no keyring, has
// no keys.
type Ring struct {
	ring atomic.Pointer[access.Keyring]
}

// NewRing returns a Ring holding k (nil: no keys).
func NewRing(k *access.Keyring) *Ring {
	r := &Ring{}
	r.ring.Store(k)
	return r
}

// Replace puts k in force for every request checked from now on.
func (r *Ring) Replace(k *access.Keyring) { r.ring.Store(k) }

// Keyring returns the keyring in force, or nil.
func (r *Ring) Keyring() *access.Keyring {
	if r == nil {
		return nil
	}
	return r.ring.Load()
}

// Len returns the number of keys in force.
func (r *Ring) Len() int { return r.Keyring().Len() }

// Authenticate is access.Keyring.Authenticate on the keyring in force.
func (r *Ring) Authenticate(presented string) (access.Principal, bool) {
	return r.Keyring().Authenticate(presented)
}
