package accessapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// ClosedOpenModeNote is what the answer to the first key of a server that
// was open (no key configured, none stored) says: from this answer on,
// REST and MCP take only keys.
const ClosedOpenModeNote = "this is the first key of a server that was open (no key configured or stored): REST and MCP are no longer open, and every request needs a key from now on, this one included"

// CreateAPIKey stores a new API key (an ADMIN's act). Its secret is
// returned once; the store keeps its hash.
type CreateAPIKey struct {
	tx         Transactor
	configured ConfiguredKeys
	ring       Ring
	random     io.Reader
	now        func() time.Time
}

// NewCreateAPIKey returns the use case. random is where secrets' bits come
// from: crypto/rand.Reader.
func NewCreateAPIKey(tx Transactor, configured ConfiguredKeys, ring Ring, random io.Reader, now func() time.Time) *CreateAPIKey {
	return &CreateAPIKey{tx: tx, configured: configured, ring: ring, random: random, now: now}
}

// CreateAPIKeyInput is the key asked for and who asks.
type CreateAPIKeyInput struct {
	Spec           access.APIKeySpec
	Actor, Channel string
}

// IssuedAPIKey is a key and its secret, shown this once.
type IssuedAPIKey struct {
	Token access.Token
	Key   access.APIKey
	// ClosedOpenMode reports that the server was open before this key
	// (ClosedOpenModeNote).
	ClosedOpenMode bool
}

// Handle validates the input (every problem at once, by field), refuses a
// name a configured or stored key has (fault.ErrConflict, naming where it
// is taken), and stores the key and an APIKeyCreated event in one
// transaction. This instance takes the key before Handle returns.
func (uc *CreateAPIKey) Handle(ctx context.Context, in CreateAPIKeyInput) (IssuedAPIKey, error) {
	// Drawn once, outside the transaction: a retried transaction stores the
	// secret the caller gets.
	k, tok, err := access.NewAPIKey(in.Spec, uc.random, uc.now(), in.Actor, in.Channel)
	if err != nil {
		return IssuedAPIKey{}, err
	}
	if src := configuredName(uc.configured, k.Name()); src != "" {
		return IssuedAPIKey{}, fault.Newf(fault.ErrConflict, "the name %q is taken by a key configured in %s (names are compared in any letter case); choose another name", k.Name(), src)
	}
	wasOpen := uc.ring.Len() == 0 && !opensREST(uc.configured)
	err = uc.tx.WithinTx(ctx, func(ctx context.Context, st Stores) error {
		switch old, err := st.Keys.Get(ctx, k.Name()); {
		case err == nil:
			return fault.Newf(fault.ErrConflict, "a stored API key is already named %q (names are compared in any letter case); choose another name, or rotate that key's secret instead", old.Name())
		case !errors.Is(err, access.ErrAPIKeyNotFound):
			return err
		}
		// Changes run one at a time, so the count cannot move under us.
		switch n, err := st.Keys.Count(ctx); {
		case err != nil:
			return err
		case n >= access.MaxStoredAPIKeys:
			return fault.Newf(fault.ErrConflict, "%d API keys are stored, the most the server keeps; revoke one that is no longer used (yukta keys list shows their last use) before creating another", n)
		case n == 0 && k.Role() == access.Worker && !opensREST(uc.configured):
			// The first key closes an open server, and a WORKER key may
			// use neither REST nor MCP: nobody could manage it after.
			return fault.Newf(fault.ErrConflict, "the server is open (no key configured or stored), and its first key closes REST and MCP to every caller without a key; a WORKER key may use neither, so it cannot be that key. Create an ADMIN key first (role ADMIN), then the WORKER key with it")
		}
		if err := st.Keys.Insert(ctx, k); err != nil {
			return err
		}
		return st.Audit.APIKeyChanged(ctx, EventAPIKeyCreated, k.Name(), Change{At: k.CreatedAt(), Actor: in.Actor, Channel: in.Channel}, describe(k))
	})
	if err != nil {
		return IssuedAPIKey{}, fmt.Errorf("create API key %q: %w", k.Name(), err)
	}
	refresh(ctx, uc.ring)
	return IssuedAPIKey{Token: tok, Key: k, ClosedOpenMode: wasOpen}, nil
}

// opensREST reports whether a configured key other than the MCP key
// exists: with one, REST was never open.
func opensREST(keys ConfiguredKeys) bool {
	if keys == nil {
		return false
	}
	for _, k := range keys.ConfiguredKeys() {
		if k.Source != SourceMCPKey {
			return true
		}
	}
	return false
}

// describe is a key's audit data: never its secret, hash or hint.
func describe(k access.APIKey) map[string]any {
	d := map[string]any{"role": k.Role().String()}
	if k.Sessions() != nil {
		d["sessions"] = k.Sessions()
	}
	if k.Queues() != nil {
		d["queues"] = k.Queues()
	}
	if !k.ExpiresAt().IsZero() {
		d["expiresAt"] = k.ExpiresAt().Format(time.RFC3339Nano)
	}
	return d
}

// refresh re-reads this instance's ring after a committed change. A
// failure leaves the re-read to StoredKeys.Run's next round (at most
// RefreshInterval away); the change itself is stored.
func refresh(ctx context.Context, ring Ring) {
	if ring != nil {
		_ = ring.Refresh(context.WithoutCancel(ctx))
	}
}
