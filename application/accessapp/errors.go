package accessapp

import (
	"strings"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// NotFound is the error for a stored key that does not exist; it matches
// access.ErrAPIKeyNotFound. The doors add their next step (the list).
func NotFound(name string) error {
	return fault.Newf(access.ErrAPIKeyNotFound, "no stored API key is named %q", name)
}

// configuredName returns the source of the configured key named name (in
// any letter case), or "".
func configuredName(keys ConfiguredKeys, name string) string {
	if keys == nil {
		return ""
	}
	for _, k := range keys.ConfiguredKeys() {
		if strings.EqualFold(k.Principal.Name(), name) {
			return k.Source
		}
	}
	return ""
}
