package postgres_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/domain/access"
)

func newAPIKey(t *testing.T, spec access.APIKeySpec, at time.Time) (access.APIKey, access.Token) {
	t.Helper()
	k, tok, err := access.NewAPIKey(spec, rand.Reader, at, "key:admin", "rest")
	if err != nil {
		t.Fatal(err)
	}
	return k, tok
}

// The store keeps a key as created (hash, never the secret), finds it in
// any letter case, rotates it in place, records last uses at most once a
// minute and only for the current secret, and tells a listener of every
// committed change.
func TestAPIKeyStore(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	store := postgres.NewAPIKeyStore(pool)
	tx := postgres.NewAPIKeyTransactor(pool)
	listener := postgres.NewAPIKeyListener(pool, func(error) {})
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); listener.Run(lctx) }()
	t.Cleanup(func() { stop(); <-done })
	// The listener says so once it is connected.
	select {
	case <-listener.Changes():
	case <-time.After(10 * time.Second):
		t.Fatal("listener did not connect")
	}

	at := time.Date(2026, 3, 1, 12, 0, 0, 987654321, time.UTC)
	k, tok := newAPIKey(t, access.APIKeySpec{Name: "CI-bot", Role: "operator", Sessions: []string{"beta", "alpha"}, TTL: "48h"}, at)
	if err := tx.WithinTx(ctx, func(ctx context.Context, st accessapp.Stores) error {
		if err := st.Keys.Insert(ctx, k); err != nil {
			return err
		}
		return st.Audit.APIKeyChanged(ctx, accessapp.EventAPIKeyCreated, k.Name(), accessapp.Change{At: at, Actor: "key:admin", Channel: "rest"}, map[string]any{"role": "OPERATOR"})
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-listener.Changes():
	case <-time.After(10 * time.Second):
		t.Fatal("no notification of the insert")
	}
	got, err := store.APIKey(ctx, "ci-BOT")
	if err != nil || got.Name() != "CI-bot" || got.Hash() != tok.Hash() || got.Hint() != tok.Hint() || got.Role() != access.Operator ||
		strings.Join(got.Sessions(), ",") != "alpha,beta" || !got.CreatedAt().Equal(k.CreatedAt()) || !got.ExpiresAt().Equal(k.ExpiresAt()) ||
		got.CreatedBy() != "key:admin" || got.CreatedVia() != "rest" || !got.LastUsedAt().IsZero() {
		t.Fatalf("read back %+v, %v; want %+v", got, err, k)
	}
	var secretRows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE position($1 in row(api_keys.*)::text) > 0`, tok.Reveal()).Scan(&secretRows); err != nil || secretRows != 0 {
		t.Fatalf("the secret is stored: %d rows (%v)", secretRows, err)
	}
	// A second key of the same name in another case is refused by the index.
	dup, _ := newAPIKey(t, access.APIKeySpec{Name: "ci-BOT", Role: "VIEWER"}, at)
	if err := store.Insert(ctx, dup); err == nil {
		t.Fatal("a second key named ci-BOT was stored")
	}

	// Last uses: recorded, then not again within a minute; a use of a
	// rotated-out secret is dropped.
	use := func(h access.TokenHash, at time.Time, from string) {
		t.Helper()
		if err := store.MarkAPIKeysUsed(ctx, []accessapp.Usage{{Hash: h, At: at, From: from}}); err != nil {
			t.Fatal(err)
		}
	}
	use(k.Hash(), at.Add(time.Hour), "10.0.0.1")
	use(k.Hash(), at.Add(time.Hour+30*time.Second), "10.0.0.2")
	got, _ = store.APIKey(ctx, "ci-bot")
	if !got.LastUsedAt().Equal(at.Add(time.Hour).Truncate(time.Microsecond)) || got.LastUsedFrom() != "10.0.0.1" {
		t.Fatalf("last use %s from %q", got.LastUsedAt(), got.LastUsedFrom())
	}
	rot, tok2, err := got.Rotate(rand.Reader, at.Add(2*time.Hour), "key:root", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.WithinTx(ctx, func(ctx context.Context, st accessapp.Stores) error { return st.Keys.Replace(ctx, rot) }); err != nil {
		t.Fatal(err)
	}
	use(k.Hash(), at.Add(3*time.Hour), "10.0.0.3")
	got, _ = store.APIKey(ctx, "ci-bot")
	if got.Hash() != tok2.Hash() || !got.LastUsedAt().IsZero() || got.RotatedBy() != "key:root" || got.RotatedVia() != "mcp" || !got.RotatedAt().Equal(rot.RotatedAt()) {
		t.Fatalf("after the rotation: %+v", got)
	}

	// Delete, then every call says not found.
	if err := tx.WithinTx(ctx, func(ctx context.Context, st accessapp.Stores) error { return st.Keys.Delete(ctx, "CI-BOT") }); err != nil {
		t.Fatal(err)
	}
	if _, err := store.APIKey(ctx, "ci-bot"); !errors.Is(err, access.ErrAPIKeyNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := store.Delete(ctx, "ci-bot"); !errors.Is(err, access.ErrAPIKeyNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	if err := store.Replace(ctx, rot); !errors.Is(err, access.ErrAPIKeyNotFound) {
		t.Fatalf("replace after delete: %v", err)
	}
	if keys, err := store.APIKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("list after delete: %v %v", keys, err)
	}
	var events int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE type = 'APIKeyCreated' AND actor = 'key:admin' AND data->>'name' = 'CI-bot'`).Scan(&events); err != nil || events != 1 {
		t.Fatalf("audit events: %d (%v)", events, err)
	}
}

// A WORKER key keeps its queue list (sorted) through insert, read, list and
// rotation; a key without one reads back nil (every queue); the table
// refuses a queue list on any other role and an unknown role.
func TestAPIKeyStoreQueues(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	store := postgres.NewAPIKeyStore(pool)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w, _ := newAPIKey(t, access.APIKeySpec{Name: "runner", Role: "WORKER", Sessions: []string{"alpha"}, Queues: []string{"gpu", "build"}}, at)
	all, _ := newAPIKey(t, access.APIKeySpec{Name: "any-queue", Role: "WORKER"}, at)
	for _, k := range []access.APIKey{w, all} {
		if err := store.Insert(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	got, err := store.APIKey(ctx, "runner")
	if err != nil || got.Role() != access.Worker || strings.Join(got.Queues(), ",") != "build,gpu" || strings.Join(got.Sessions(), ",") != "alpha" {
		t.Fatalf("read back %v %v %v (%v)", got.Role(), got.Queues(), got.Sessions(), err)
	}
	if p := got.Principal(); !p.MayUseQueue("gpu") || p.MayUseQueue("etl") {
		t.Fatalf("principal queues %v", p.Queues())
	}
	if got, err := store.APIKey(ctx, "any-queue"); err != nil || got.Queues() != nil {
		t.Fatalf("a key without a queue list reads back %q (%v)", got.Queues(), err)
	}
	keys, err := store.APIKeys(ctx)
	if err != nil || len(keys) != 2 || keys[1].Name() != "runner" || strings.Join(keys[1].Queues(), ",") != "build,gpu" {
		t.Fatalf("list %v (%v)", keys, err)
	}
	r, _, err := got.Rotate(rand.Reader, at.Add(time.Minute), "key:admin", "rest")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Replace(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, err := store.APIKey(ctx, "runner"); err != nil || strings.Join(got.Queues(), ",") != "build,gpu" {
		t.Fatalf("after rotation %v (%v)", got.Queues(), err)
	}
	// The schema is the second fence: no list on another role, no role
	// beyond the four.
	for _, q := range []string{
		`INSERT INTO api_keys (name, role, queues, secret_hash, hint, created_at) VALUES ('v', 'VIEWER', '{build}', sha256('v'), 'yk_v', now())`,
		`INSERT INTO api_keys (name, role, secret_hash, hint, created_at) VALUES ('r', 'ROOT', sha256('r'), 'yk_r', now())`,
	} {
		if _, err := pool.Exec(ctx, q); err == nil {
			t.Errorf("stored: %s", q)
		}
	}
}
