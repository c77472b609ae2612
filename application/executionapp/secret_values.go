package executionapp

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// DefinitionSource loads the definition snapshot an execution runs with.
type DefinitionSource interface {
	Source(ctx context.Context, executionID string) (RunSource, error)
}

// minSecretLen is the shortest secret value replaced: a one-letter "secret"
// would mask every such letter of every line.
const minSecretLen = 4

// SecretValues returns replacer pairs (value, MaskedValue) for every secret
// config value of w (secret fields, and each value of a secret map such as
// secretHeaders or secretQuery), longest first so a value containing another
// is masked whole; an "Authorization" value's token is masked on its own
// too, and so is a value as it reads escaped in a URL query.
func SecretValues(w session.Workflow, c session.Catalog) []string {
	var vals []string
	for _, n := range w.Nodes() {
		d, ok := c.Describe(n.Type())
		if !ok {
			continue
		}
		for _, s := range d.SecretValues(n.Config()) {
			vals = append(vals, s)
			if _, tok, ok := strings.Cut(s, " "); ok {
				vals = append(vals, strings.TrimSpace(tok))
			}
			if q := url.QueryEscape(s); q != s {
				vals = append(vals, q)
			}
		}
	}
	vals = slices.DeleteFunc(vals, func(v string) bool { return len(v) < minSecretLen })
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	vals = slices.Compact(vals)
	pairs := make([]string, 0, 2*len(vals))
	for _, v := range vals {
		pairs = append(pairs, v, plugin.MaskedValue)
	}
	return pairs
}
