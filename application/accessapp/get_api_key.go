package accessapp

import (
	"context"
	"errors"
	"fmt"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// GetAPIKey reads one stored key (never its secret, which is not stored).
type GetAPIKey struct {
	keys       Reader
	configured ConfiguredKeys
}

// NewGetAPIKey returns the use case.
func NewGetAPIKey(keys Reader, configured ConfiguredKeys) *GetAPIKey {
	return &GetAPIKey{keys: keys, configured: configured}
}

// Handle returns the stored key of the name (any letter case). A name of a
// configured key is reported as such: it is not stored, so it is read in
// the list and changed where it is configured.
func (uc *GetAPIKey) Handle(ctx context.Context, name string) (access.APIKey, error) {
	k, err := uc.keys.APIKey(ctx, name)
	if errors.Is(err, access.ErrAPIKeyNotFound) {
		return access.APIKey{}, notStored(uc.configured, name)
	}
	if err != nil {
		return access.APIKey{}, fmt.Errorf("read API key %q: %w", name, err)
	}
	return k, nil
}

// notStored is the error for a name no stored key has: a configured key's
// name says where that key is changed instead.
func notStored(configured ConfiguredKeys, name string) error {
	if src := configuredName(configured, name); src != "" {
		return fault.Newf(access.ErrAPIKeyNotFound, "%q is a key configured in %s, not a stored one; change it there", name, src)
	}
	return NotFound(name)
}
