package accessapp

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/access"
)

// SourceStored is the Source of a stored key in a list.
const SourceStored = "api"

// ListedKey is one key of the list: a stored key (Source SourceStored,
// Stored set) or a configured one (Source names its setting; only its
// principal is known).
type ListedKey struct {
	Principal access.Principal
	Source    string
	Stored    access.APIKey
}

// ListAPIKeys lists every key of the server: the stored ones with their
// history, and the configured ones with the setting they come from. No
// secret is in it, nor a hash.
type ListAPIKeys struct {
	keys       Reader
	configured ConfiguredKeys
}

// NewListAPIKeys returns the use case.
func NewListAPIKeys(keys Reader, configured ConfiguredKeys) *ListAPIKeys {
	return &ListAPIKeys{keys: keys, configured: configured}
}

// Handle returns the configured keys, then the stored ones, each by name.
func (uc *ListAPIKeys) Handle(ctx context.Context) ([]ListedKey, error) {
	stored, err := uc.keys.APIKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	var out []ListedKey
	if uc.configured != nil {
		for _, c := range uc.configured.ConfiguredKeys() {
			out = append(out, ListedKey{Principal: c.Principal, Source: c.Source})
		}
	}
	slices.SortFunc(out, func(a, b ListedKey) int { return strings.Compare(a.Principal.Name(), b.Principal.Name()) })
	for _, k := range stored {
		out = append(out, ListedKey{Principal: k.Principal(), Source: SourceStored, Stored: k})
	}
	return out, nil
}
