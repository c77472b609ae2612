package accessapp_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// configured is a fixed list of configured keys.
type configured []accessapp.ConfiguredKey

func (c configured) ConfiguredKeys() []accessapp.ConfiguredKey { return c }

func principal(t *testing.T, name string) access.Principal {
	t.Helper()
	p, err := access.NewPrincipal(name, access.Admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clock is a settable now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	pool   *pgxpool.Pool
	store  *postgres.APIKeyStore
	ring   *accessapp.StoredKeys
	create *accessapp.CreateAPIKey
	rotate *accessapp.RotateAPIKey
	revoke *accessapp.RevokeAPIKey
	expire *accessapp.SetAPIKeyExpiry
	get    *accessapp.GetAPIKey
	list   *accessapp.ListAPIKeys
}

func newFixture(t *testing.T, conf configured) fixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	store := postgres.NewAPIKeyStore(pool)
	tx := postgres.NewAPIKeyTransactor(pool)
	ring := accessapp.NewStoredKeys(store, store, nil, time.Now, func(err error) { t.Errorf("ring: %v", err) })
	if err := ring.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	return fixture{pool: pool, store: store, ring: ring,
		create: accessapp.NewCreateAPIKey(tx, conf, ring, rand.Reader, time.Now),
		rotate: accessapp.NewRotateAPIKey(tx, conf, ring, rand.Reader, time.Now),
		revoke: accessapp.NewRevokeAPIKey(tx, conf, ring, time.Now),
		expire: accessapp.NewSetAPIKeyExpiry(tx, conf, ring, time.Now),
		get:    accessapp.NewGetAPIKey(store, conf), list: accessapp.NewListAPIKeys(store, conf)}
}

func (f fixture) rows(t *testing.T) string {
	t.Helper()
	var keys, events int
	if err := f.pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM api_keys), (SELECT count(*) FROM events)`).Scan(&keys, &events); err != nil {
		t.Fatal(err)
	}
	return strings.Repeat("k", keys) + "/" + strings.Repeat("e", events)
}

func TestCreateRotateRevoke(t *testing.T) {
	t.Parallel()
	conf := configured{{Principal: principal(t, "admin"), Source: "YUKTA_API_KEY"}, {Principal: principal(t, "mcp"), Source: accessapp.SourceMCPKey}}
	f := newFixture(t, conf)
	ctx := t.Context()
	in := func(name string) accessapp.CreateAPIKeyInput {
		return accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: name, Role: "OPERATOR", Sessions: []string{"etl"}, TTL: "24h"}, Actor: "key:admin", Channel: "rest"}
	}
	res, err := f.create.Handle(ctx, in("ci"))
	if err != nil || res.ClosedOpenMode || res.Key.Name() != "ci" {
		t.Fatalf("create: %+v %v", res, err)
	}
	// This instance takes it before Handle returns.
	if p, ok := f.ring.Authenticate(res.Token.Reveal(), "10.0.0.1"); !ok || p.Actor() != "key:ci" || p.Role() != access.Operator {
		t.Fatalf("the new key is not in the ring: %v", p)
	}

	// Refusals change nothing.
	before := f.rows(t)
	for _, c := range []struct {
		in   accessapp.CreateAPIKeyInput
		kind error
		want string
	}{
		{in("ADMIN"), fault.ErrConflict, "YUKTA_API_KEY"},
		{in("Mcp"), fault.ErrConflict, "YUKTA_MCP_API_KEY"},
		{in("CI"), fault.ErrConflict, "rotate"},
		{accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: "x y", Role: "boss"}}, fault.ErrInvalid, "name"},
	} {
		if _, err := f.create.Handle(ctx, c.in); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("create %+v: %v, want %v naming %s", c.in.Spec, err, c.kind, c.want)
		}
	}
	if _, err := f.rotate.Handle(ctx, accessapp.RotateAPIKeyInput{Name: "admin"}); !errors.Is(err, access.ErrAPIKeyNotFound) || !strings.Contains(err.Error(), "YUKTA_API_KEY") {
		t.Errorf("rotate a configured key: %v", err)
	}
	if _, err := f.revoke.Handle(ctx, accessapp.RevokeAPIKeyInput{Name: "nobody"}); !errors.Is(err, access.ErrAPIKeyNotFound) {
		t.Errorf("revoke nobody: %v", err)
	}
	if after := f.rows(t); after != before {
		t.Fatalf("refusals changed the database: %s, then %s", before, after)
	}

	// Rotate: the old secret is refused at once here, the new one taken.
	rot, err := f.rotate.Handle(ctx, accessapp.RotateAPIKeyInput{Name: "CI", Actor: "key:admin", Channel: "mcp"})
	if err != nil || rot.Key.RotatedVia() != "mcp" || rot.Token.Reveal() == res.Token.Reveal() {
		t.Fatalf("rotate: %+v %v", rot, err)
	}
	if _, ok := f.ring.Authenticate(res.Token.Reveal(), ""); ok {
		t.Fatal("the rotated-out secret still works")
	}
	if _, ok := f.ring.Authenticate(rot.Token.Reveal(), ""); !ok {
		t.Fatal("the new secret does not work")
	}

	list, err := f.list.Handle(ctx)
	if err != nil || len(list) != 3 || list[0].Source != "YUKTA_API_KEY" || list[1].Source != accessapp.SourceMCPKey || list[2].Source != accessapp.SourceStored ||
		list[2].Stored.Hash() != rot.Token.Hash() {
		t.Fatalf("list: %+v %v", list, err)
	}
	if k, err := f.get.Handle(ctx, "ci"); err != nil || k.Hint() != rot.Token.Hint() {
		t.Fatalf("get: %v", err)
	}

	// Revoke: refused at once here.
	if _, err := f.revoke.Handle(ctx, accessapp.RevokeAPIKeyInput{Name: "ci", Actor: "key:admin", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.ring.Authenticate(rot.Token.Reveal(), ""); ok || f.ring.Len() != 0 {
		t.Fatal("the revoked key still works")
	}

	// The audit trail: who and through which door, never a secret.
	rows, err := f.pool.Query(ctx, `SELECT type, actor, channel, data::text FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var trail []string
	for rows.Next() {
		var typ, actor, ch, data string
		if err := rows.Scan(&typ, &actor, &ch, &data); err != nil {
			t.Fatal(err)
		}
		trail = append(trail, typ+" "+actor+" "+ch)
		for _, tok := range []access.Token{res.Token, rot.Token} {
			if strings.Contains(data, tok.Reveal()) || strings.Contains(data, tok.Hint()) {
				t.Fatalf("%s holds a secret or its hint: %s", typ, data)
			}
		}
		if !strings.Contains(data, `"name": "ci"`) || !strings.Contains(data, `"role": "OPERATOR"`) || !strings.Contains(data, `"etl"`) {
			t.Fatalf("%s data: %s", typ, data)
		}
	}
	if got := strings.Join(trail, "|"); got != "APIKeyCreated key:admin rest|APIKeyRotated key:admin mcp|APIKeyRevoked key:admin cli" {
		t.Fatalf("trail %s", got)
	}
}

// An expiry set on a stored key is stored with an APIKeyExpiryChanged event
// and taken by this instance at once: a key whose new expiry has passed is
// refused although its secret did not change. Refusals change nothing.
func TestSetAPIKeyExpiry(t *testing.T) {
	t.Parallel()
	conf := configured{{Principal: principal(t, "admin"), Source: "YUKTA_API_KEY"}}
	f := newFixture(t, conf)
	ctx := t.Context()
	res, err := f.create.Handle(ctx, accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: "ci", Role: "VIEWER"}, Actor: "key:admin", Channel: "rest"})
	if err != nil {
		t.Fatal(err)
	}
	before := f.rows(t)
	for _, c := range []struct {
		in   accessapp.SetAPIKeyExpiryInput
		kind error
		want string
	}{
		{accessapp.SetAPIKeyExpiryInput{Name: "ci"}, fault.ErrInvalid, "expiresAt"},
		{accessapp.SetAPIKeyExpiryInput{Name: "ci", TTL: "soon"}, fault.ErrInvalid, "ttl"},
		{accessapp.SetAPIKeyExpiryInput{Name: "admin", TTL: "1h"}, access.ErrAPIKeyNotFound, "YUKTA_API_KEY"},
		{accessapp.SetAPIKeyExpiryInput{Name: "nobody", TTL: "1h"}, access.ErrAPIKeyNotFound, "nobody"},
	} {
		if _, err := f.expire.Handle(ctx, c.in); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %v naming %s", c.in, err, c.kind, c.want)
		}
	}
	if after := f.rows(t); after != before {
		t.Fatalf("refusals changed the database: %s, then %s", before, after)
	}
	when := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	k, err := f.expire.Handle(ctx, accessapp.SetAPIKeyExpiryInput{Name: "CI", ExpiresAt: when.Format(time.RFC3339), Actor: "key:admin", Channel: "mcp"})
	if err != nil || !k.ExpiresAt().Equal(when) {
		t.Fatalf("set expiresAt: %v %v", k.ExpiresAt(), err)
	}
	if got, err := f.get.Handle(ctx, "ci"); err != nil || !got.ExpiresAt().Equal(when) || got.Hash() != res.Token.Hash() {
		t.Fatalf("read back: %v %v", got.ExpiresAt(), err)
	}
	if _, ok := f.ring.Authenticate(res.Token.Reveal(), ""); !ok {
		t.Fatal("the key stopped working before its expiry")
	}
	// A near expiry ends the key then, on this instance without a re-read.
	if _, err := f.expire.Handle(ctx, accessapp.SetAPIKeyExpiryInput{Name: "ci", TTL: "1ms", Actor: "key:admin", Channel: "rest"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := f.ring.Authenticate(res.Token.Reveal(), ""); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key still works after its new expiry")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := f.expire.Handle(ctx, accessapp.SetAPIKeyExpiryInput{Name: "ci", TTL: "1h"}); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("an expired key given a new expiry: %v", err)
	}
	var trail string
	if err := f.pool.QueryRow(ctx, `SELECT string_agg(type || ' ' || channel || ' ' || (data ? 'expiresAt')::text, '|' ORDER BY seq) FROM events`).Scan(&trail); err != nil {
		t.Fatal(err)
	}
	if trail != "APIKeyCreated rest false|APIKeyExpiryChanged mcp true|APIKeyExpiryChanged rest true" {
		t.Fatalf("trail %s", trail)
	}
}

// The first key of a server with no configured key that opens REST says it
// closed open mode; the second does not.
func TestCreateClosesOpenMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, configured{{Principal: principal(t, "mcp"), Source: accessapp.SourceMCPKey}})
	first, err := f.create.Handle(t.Context(), accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: "first", Role: "ADMIN"}, Actor: "anonymous", Channel: "rest"})
	if err != nil || !first.ClosedOpenMode {
		t.Fatalf("first: %+v %v", first, err)
	}
	second, err := f.create.Handle(t.Context(), accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: "second", Role: "ADMIN"}, Actor: "key:first", Channel: "rest"})
	if err != nil || second.ClosedOpenMode {
		t.Fatalf("second: %+v %v", second, err)
	}
}

// A WORKER key cannot be the first key of an open server (it would close
// REST and MCP, and may use neither): 409, nothing stored. With an ADMIN
// key stored, or a key configured for REST, it is created.
func TestWorkerKeyIsNotAnOpenServersFirstKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, configured{{Principal: principal(t, "mcp"), Source: accessapp.SourceMCPKey}})
	in := accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: "runner", Role: "WORKER", Queues: []string{"gpu"}}, Actor: "anonymous", Channel: "rest"}
	_, err := f.create.Handle(t.Context(), in)
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "Create an ADMIN key first") {
		t.Fatalf("a WORKER key first: %v", err)
	}
	if got := f.rows(t); got != "/" {
		t.Fatalf("the refusal stored %s", got)
	}
	if _, err := f.create.Handle(t.Context(), accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: "root", Role: "ADMIN"}, Actor: "anonymous", Channel: "rest"}); err != nil {
		t.Fatal(err)
	}
	if res, err := f.create.Handle(t.Context(), in); err != nil || res.ClosedOpenMode || strings.Join(res.Key.Queues(), ",") != "gpu" {
		t.Fatalf("the WORKER key after an ADMIN key: %+v %v", res, err)
	}
	g := newFixture(t, configured{{Principal: principal(t, "ops"), Source: "YUKTA_API_KEYS"}})
	if _, err := g.create.Handle(t.Context(), in); err != nil {
		t.Fatalf("a WORKER key beside a configured key: %v", err)
	}
}

// Run re-reads the keys on a change hint at once, and without one within
// RefreshInterval (a change another instance made while this one's
// listener was away); it writes a key's last use at most once per
// UsedResolution, and what is pending when it stops.
func TestStoredKeysRun(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	store := postgres.NewAPIKeyStore(pool)
	tx := postgres.NewAPIKeyTransactor(pool)
	clk := &clock{t: time.Now()}
	changes := make(chan struct{}, 1)
	ring := accessapp.NewStoredKeys(store, store, changes, clk.now, func(err error) { t.Errorf("ring: %v", err) })
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); ring.Run(ctx) }()
	stopped := false
	join := func() {
		if !stopped {
			stopped = true
			stop()
			<-done
		}
	}
	t.Cleanup(join)

	// Another instance's use case refreshes that instance's ring only.
	otherRing := accessapp.NewStoredKeys(store, store, nil, time.Now, func(error) {})
	other := accessapp.NewCreateAPIKey(tx, nil, otherRing, rand.Reader, time.Now)
	waitFor := func(what string, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > 5*accessapp.RefreshInterval {
				t.Fatalf("%s: not within %s", what, 5*accessapp.RefreshInterval)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	a, err := other.Handle(t.Context(), accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: "a", Role: "VIEWER"}})
	if err != nil {
		t.Fatal(err)
	}
	took := waitFor("the periodic re-read", func() bool { return ring.Len() == 1 })
	t.Logf("a change seen without a notification after %d ms (RefreshInterval %s)", took.Milliseconds(), accessapp.RefreshInterval)
	if _, err := other.Handle(t.Context(), accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: "b", Role: "VIEWER"}}); err != nil {
		t.Fatal(err)
	}
	changes <- struct{}{}
	took = waitFor("the notified re-read", func() bool { return ring.Len() == 2 })
	t.Logf("a notified change seen after %d ms", took.Milliseconds())

	lastUse := func() (time.Time, string) {
		k, err := store.APIKey(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		return k.LastUsedAt(), k.LastUsedFrom()
	}
	if _, ok := ring.Authenticate(a.Token.Reveal(), "10.0.0.1"); !ok {
		t.Fatal("a")
	}
	first := clk.now().UTC().Truncate(time.Microsecond)
	waitFor("the first use written", func() bool { at, from := lastUse(); return at.Equal(first) && from == "10.0.0.1" })
	// A use 30 s later is not recorded: had it been, the store would
	// refuse the one 61 s after the first (31 s after it), and the last
	// use would read 10.0.0.2.
	clk.add(30 * time.Second)
	ring.Authenticate(a.Token.Reveal(), "10.0.0.2")
	clk.add(31 * time.Second)
	ring.Authenticate(a.Token.Reveal(), "10.0.0.3")
	join() // the pending use is written on the way out
	if at, from := lastUse(); !at.Equal(clk.now().UTC().Truncate(time.Microsecond)) || from != "10.0.0.3" {
		t.Fatalf("after stop: last use %s from %s", at, from)
	}
}

// TestCreateStopsAtTheStoredKeysBound: the key that makes MaxStoredAPIKeys
// is stored, the next is refused naming the bound and how to make room, and
// the refusal stores nothing.
func TestCreateStopsAtTheStoredKeysBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := t.Context()
	if _, err := f.pool.Exec(ctx, `INSERT INTO api_keys (name, role, secret_hash, hint, created_at)
		SELECT 'filler-' || i, 'VIEWER', sha256(('filler-' || i)::bytea), 'yk_filler', now()
		FROM generate_series(1, $1) AS i`, access.MaxStoredAPIKeys-1); err != nil {
		t.Fatal(err)
	}
	in := func(name string) accessapp.CreateAPIKeyInput {
		return accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: name, Role: "VIEWER"}, Actor: "key:admin", Channel: "rest"}
	}
	if _, err := f.create.Handle(ctx, in("last")); err != nil {
		t.Fatalf("the key that makes %d: %v", access.MaxStoredAPIKeys, err)
	}
	before := f.rows(t)
	_, err := f.create.Handle(ctx, in("one-more"))
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), fmt.Sprint(access.MaxStoredAPIKeys)) || !strings.Contains(err.Error(), "revoke") {
		t.Fatalf("a key beyond the bound: %v, want a conflict naming %d and what to revoke", err, access.MaxStoredAPIKeys)
	}
	if after := f.rows(t); after != before {
		t.Fatalf("the refused create changed the store: %d, then %d rows", len(before), len(after))
	}
}
