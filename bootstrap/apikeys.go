package bootstrap

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/accessapp"
)

// apiKeyModule is stored API keys: the store, this instance's in-memory
// ring (loaded before the server listens, then kept fresh by a change
// listener and a re-read every accessapp.RefreshInterval) and the ADMIN's
// use cases.
var apiKeyModule = fx.Module("apikeys",
	fx.Provide(
		postgres.NewAPIKeyStore,
		postgres.NewAPIKeyTransactor,
		func(cfg Config) accessapp.ConfiguredKeys {
			return configuredKeys{keys: cfg.Keys, fromEnv: cfg.APIKeyFromEnv}
		},
		newStoredKeys,
		func(tx *postgres.APIKeyTransactor, c accessapp.ConfiguredKeys, ring *accessapp.StoredKeys) *accessapp.CreateAPIKey {
			return accessapp.NewCreateAPIKey(tx, c, ring, rand.Reader, time.Now)
		},
		func(s *postgres.APIKeyStore, c accessapp.ConfiguredKeys) *accessapp.ListAPIKeys {
			return accessapp.NewListAPIKeys(s, c)
		},
		func(s *postgres.APIKeyStore, c accessapp.ConfiguredKeys) *accessapp.GetAPIKey {
			return accessapp.NewGetAPIKey(s, c)
		},
		func(tx *postgres.APIKeyTransactor, c accessapp.ConfiguredKeys, ring *accessapp.StoredKeys) *accessapp.RotateAPIKey {
			return accessapp.NewRotateAPIKey(tx, c, ring, rand.Reader, time.Now)
		},
		func(tx *postgres.APIKeyTransactor, c accessapp.ConfiguredKeys, ring *accessapp.StoredKeys) *accessapp.RevokeAPIKey {
			return accessapp.NewRevokeAPIKey(tx, c, ring, time.Now)
		},
		func(tx *postgres.APIKeyTransactor, c accessapp.ConfiguredKeys, ring *accessapp.StoredKeys) *accessapp.SetAPIKeyExpiry {
			return accessapp.NewSetAPIKeyExpiry(tx, c, ring, time.Now)
		},
		func(c *accessapp.CreateAPIKey, l *accessapp.ListAPIKeys, g *accessapp.GetAPIKey, r *accessapp.RotateAPIKey, v *accessapp.RevokeAPIKey, x *accessapp.SetAPIKeyExpiry) httpapi.KeyUseCases {
			return httpapi.KeyUseCases{Create: c, List: l, Get: g, Rotate: r, Revoke: v, Expire: x}
		},
	),
)

// newStoredKeys builds the ring and gives it its goroutines: the first
// read runs in OnStart, before the HTTP server listens (so a server with
// stored keys is never open for a moment), and refuses the start when it
// fails; then the change listener and the ring's Run, each owned by the
// lifecycle with a stop and a join.
func newStoredKeys(lc fx.Lifecycle, pool *pgxpool.Pool, store *postgres.APIKeyStore, configured accessapp.ConfiguredKeys, log *zap.Logger) *accessapp.StoredKeys {
	log = log.Named("apikeys")
	l := postgres.NewAPIKeyListener(pool, func(err error) { log.Warn("API key listener reconnecting", zap.Error(err)) })
	ring := accessapp.NewStoredKeys(store, store, l.Changes(), time.Now, func(err error) {
		log.Warn("stored API keys: re-read or last-use write failed; the last good set stays in use", zap.Error(err))
	})
	lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		if err := ring.Refresh(ctx); err != nil {
			return fmt.Errorf("read the stored API keys: %w", err)
		}
		log.Info("stored API keys loaded", zap.Int("keys", ring.Len()))
		warnSharedNames(ctx, store, configured, log)
		return nil
	}})
	runInBackground(lc, "API key listener", l.Run, nil, nil)
	runInBackground(lc, "stored API keys", ring.Run, nil, nil)
	return ring
}

// configuredKeys are the keys the server was started with, for the
// stored keys' use cases: listed with their setting, and names a stored
// key may not take.
type configuredKeys struct {
	keys    authn.Keys
	fromEnv bool // YUKTA_API_KEY is set: the API ring's "admin" is it
}

func (c configuredKeys) ConfiguredKeys() []accessapp.ConfiguredKey {
	var out []accessapp.ConfiguredKey
	for _, p := range c.keys.API.Keyring().Principals() {
		src := "YUKTA_API_KEYS"
		if c.fromEnv && strings.EqualFold(p.Name(), envKeyName) {
			src = "YUKTA_API_KEY"
		}
		out = append(out, accessapp.ConfiguredKey{Principal: p, Source: src})
	}
	for _, p := range c.keys.MCP.Principals() {
		out = append(out, accessapp.ConfiguredKey{Principal: p, Source: accessapp.SourceMCPKey})
	}
	return out
}

// warnSharedNames logs each stored key whose name a configured key took
// since it was stored (a key file edited to add it): both authenticate as
// key:<name>, so the audit trail cannot tell them apart until one goes.
func warnSharedNames(ctx context.Context, store *postgres.APIKeyStore, configured accessapp.ConfiguredKeys, log *zap.Logger) {
	keys, err := store.APIKeys(ctx)
	if err != nil {
		return
	}
	for _, k := range keys {
		for _, c := range configured.ConfiguredKeys() {
			if k.SameName(c.Principal.Name()) {
				log.Warn("a stored API key has the name of a configured key; both act as key:"+k.Name()+". Revoke the stored one (yukta keys revoke) or rename the configured one",
					zap.String("name", k.Name()), zap.String("configured_in", c.Source))
			}
		}
	}
}
