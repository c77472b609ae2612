package supervisorapp

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/plugin"
	"github.com/yukta/yukta/domain/session"
)

// EventRedactor returns the data of an event as a supervisor may see it.
type EventRedactor interface {
	Redact(ctx context.Context, e executionapp.StoredEvent) (map[string]any, error)
}

// Redactor removes secrets from event data before it reaches a supervisor
// (EVENT signals, rule conditions, dry runs). Two rules apply to a copy of
// the data, whatever its depth:
//
//   - every string has the secret config values of the run's workflow
//     (secret fields and secret maps, as logs are masked) replaced by ***;
//   - the value of a member whose name says it holds a secret (secret,
//     password, token, authorization, apiKey, credential, cookie,
//     privateKey, in any case and spelling with - or _) becomes ***.
//
// The engine already masks errors and prompts when it writes them; this
// is the second line, and the one that covers events written by other
// doors. The secret values of a run are read once and kept for a while.
type Redactor struct {
	defs    executionapp.DefinitionSource
	catalog session.Catalog

	mu    sync.Mutex
	cache map[string]*strings.Replacer
}

// redactorCacheSize bounds the runs whose secret values are kept.
const redactorCacheSize = 1024

// NewRedactor returns a redactor that reads run definitions from defs.
func NewRedactor(defs executionapp.DefinitionSource, catalog session.Catalog) *Redactor {
	return &Redactor{defs: defs, catalog: catalog, cache: map[string]*strings.Replacer{}}
}

var _ EventRedactor = (*Redactor)(nil)

// Redact returns a redacted copy of e's data.
func (r *Redactor) Redact(ctx context.Context, e executionapp.StoredEvent) (map[string]any, error) {
	var mask *strings.Replacer
	if e.ExecutionID != "" {
		var err error
		if mask, err = r.masker(ctx, e.ExecutionID); err != nil {
			return nil, err
		}
	}
	out, _ := redactValue(e.Data, mask).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

func (r *Redactor) masker(ctx context.Context, executionID string) (*strings.Replacer, error) {
	r.mu.Lock()
	m, ok := r.cache[executionID]
	r.mu.Unlock()
	if ok {
		return m, nil
	}
	src, err := r.defs.Source(ctx, executionID)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		m = nil // the run is gone (its session was deleted): names still mask
	case err != nil:
		return nil, err
	default:
		w, err := session.RestoreWorkflow(src.WorkflowID, "", src.Definition)
		if err != nil {
			return nil, err
		}
		if pairs := executionapp.SecretValues(w, r.catalog); len(pairs) > 0 {
			m = strings.NewReplacer(pairs...)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= redactorCacheSize {
		for k := range r.cache { // evict one at random: O(1), and a run still in use is read again
			delete(r.cache, k)
			break
		}
	}
	r.cache[executionID] = m
	return m, nil
}

// redactValue returns a redacted copy of a JSON value.
func redactValue(v any, mask *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		if mask != nil {
			return mask.Replace(x)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if plugin.SecretName(k) {
				out[k] = plugin.MaskedValue
				continue
			}
			out[k] = redactValue(e, mask)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e, mask)
		}
		return out
	}
	return v
}
