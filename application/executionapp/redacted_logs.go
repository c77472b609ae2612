package executionapp

import (
	"context"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// DefinitionSource loads the definition snapshot an execution runs with.
type DefinitionSource interface {
	Source(ctx context.Context, executionID string) (RunSource, error)
}

// RedactedLogs reads an execution's log tail for readers that must never see
// a secret (agents): every value of a secret config field of the execution's
// own definition snapshot is replaced by plugin.MaskedValue in the returned
// messages. Ownership, filter and caps are TailLogs'.
type RedactedLogs struct {
	tail    *TailLogs
	defs    DefinitionSource
	catalog session.Catalog
}

// NewRedactedLogs returns the use case.
func NewRedactedLogs(tail *TailLogs, defs DefinitionSource, c session.Catalog) *RedactedLogs {
	return &RedactedLogs{tail: tail, defs: defs, catalog: c}
}

// minSecretLen is the shortest secret value replaced: a one-letter "secret"
// would mask every such letter of every line.
const minSecretLen = 4

// Handle reads the tail and redacts it.
func (uc *RedactedLogs) Handle(ctx context.Context, in TailInput) (TailResult, error) {
	res, err := uc.tail.Handle(ctx, in)
	if err != nil || len(res.Lines) == 0 {
		return res, err
	}
	src, err := uc.defs.Source(ctx, in.ExecutionID)
	if err != nil {
		return TailResult{}, err
	}
	w, err := session.RestoreWorkflow(src.WorkflowID, "", src.Definition)
	if err != nil {
		return TailResult{}, err
	}
	secrets := SecretValues(w, uc.catalog)
	if len(secrets) == 0 {
		return res, nil
	}
	r := strings.NewReplacer(secrets...)
	lines := slices.Clone(res.Lines)
	for i := range lines {
		lines[i].Message = r.Replace(lines[i].Message)
	}
	res.Lines = lines
	return res, nil
}

// SecretValues returns replacer pairs (value, MaskedValue) for every secret
// config value of w, longest first so a value containing another is masked
// whole; an "Authorization" value's token is masked on its own too.
func SecretValues(w session.Workflow, c session.Catalog) []string {
	var vals []string
	for _, n := range w.Nodes() {
		d, ok := c.Describe(n.Type())
		if !ok {
			continue
		}
		cfg := n.Config()
		for _, f := range d.Fields {
			s, ok := cfg[f.Name].(string)
			if !f.Secret || !ok || s == plugin.MaskedValue {
				continue
			}
			vals = append(vals, s)
			if _, tok, ok := strings.Cut(s, " "); ok {
				vals = append(vals, strings.TrimSpace(tok))
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
