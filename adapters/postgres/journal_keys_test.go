package postgres_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
)

func seedKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

var testHint = journalapp.KeyHint{Same: "the same key", Rotate: "--rotate-journal-key"}

// TestJournalKeyRegistry: the first key registers as current and starts
// again as a no-op; another key is refused (naming both ids and both ways
// forward) and changes nothing; rotation makes it current and retires the
// first, which can then never come back; the registry lists both.
func TestJournalKeyRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	reg := postgres.NewJournalKeys(pool)
	uc := journalapp.NewRegisterKey(reg, testHint, time.Now)
	k1, k2 := pubOf(seedKey(1)), pubOf(seedKey(2))
	id1, id2 := journal.KeyID(k1), journal.KeyID(k2)

	if r, err := uc.Handle(ctx, k1, false); err != nil || !r.Registered || r.KeyID != id1 || r.Retired != "" {
		t.Fatalf("first key: %+v %v", r, err)
	}
	if r, err := uc.Handle(ctx, k1, false); err != nil || r.Registered {
		t.Fatalf("the current key again: %+v %v", r, err)
	}
	if r, err := uc.Handle(ctx, k1, true); err != nil || r.Registered || r.Retired != "" {
		t.Fatalf("rotating to the current key: %+v %v", r, err)
	}
	_, err := uc.Handle(ctx, k2, false)
	if !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("another key: %v, want a conflict", err)
	}
	for _, want := range []string{id1, id2, "the same key", "--rotate-journal-key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not name %q", err, want)
		}
	}
	if keys, err := reg.Keys(ctx); err != nil || len(keys) != 1 || keys[0].KeyID != id1 || keys[0].Status != journalapp.KeyCurrent {
		t.Fatalf("after a refusal: %+v %v", keys, err)
	}

	r, err := uc.Handle(ctx, k2, true)
	if err != nil || !r.Registered || r.Retired != id1 {
		t.Fatalf("rotation: %+v %v", r, err)
	}
	keys, err := reg.Keys(ctx)
	if err != nil || len(keys) != 2 || keys[0].KeyID != id2 || keys[0].Status != journalapp.KeyCurrent || !keys[0].RetiredAt.IsZero() ||
		keys[1].KeyID != id1 || keys[1].Status != journalapp.KeyRetired || keys[1].RetiredAt.IsZero() || !bytes.Equal(keys[1].PublicKey, k1) {
		t.Fatalf("after rotation: %+v %v", keys, err)
	}
	for _, rotate := range []bool{false, true} {
		_, err := uc.Handle(ctx, k1, rotate)
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "retired") || !strings.Contains(err.Error(), id2) {
			t.Errorf("the retired key (rotate %v): %v", rotate, err)
		}
	}
	// Only public keys: the table has no column a private key could go in.
	var cols string
	if err := pool.QueryRow(ctx, `SELECT string_agg(column_name, ',' ORDER BY column_name) FROM information_schema.columns WHERE table_name = 'journal_keys'`).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if cols != "algorithm,key_id,public_key,registered_at,retired_at,status" {
		t.Errorf("journal_keys columns: %s", cols)
	}
}

// TestJournalKeyRegistrationRace: instances with different keys starting
// at once on an empty registry: exactly one key becomes current, every
// other start is refused.
func TestJournalKeyRegistrationRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	uc := journalapp.NewRegisterKey(postgres.NewJournalKeys(pool), testHint, time.Now)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = uc.Handle(ctx, pubOf(seedKey(byte(10+i))), false)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, fault.ErrConflict):
			t.Errorf("a losing start: %v, want a conflict", err)
		}
	}
	keys, err := postgres.NewJournalKeys(pool).Keys(ctx)
	if won != 1 || err != nil || len(keys) != 1 {
		t.Fatalf("%d starts won, registry %+v %v; want one", won, keys, err)
	}
}

// TestRetiredKeySignsNothing: after a rotation, an observer still running
// with the old key fails the rounds that would sign (appending nothing), and
// one with the new key journals the events; its checkpoint names the new
// key, and an old checkpoint still verifies with the retired key.
func TestRetiredKeySignsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newJournalFixture(t, 100) // its key is registered, current
	old := f.emitRuns(t, 0, 1)
	f.drain(t)
	if v := f.verifyOne(t, old[0]); v.Result.Result != journal.VerdictValid {
		t.Fatalf("before rotation: %+v", v)
	}
	newKey := seedKey(42)
	if _, err := journalapp.NewRegisterKey(postgres.NewJournalKeys(f.pool), testHint, time.Now).Handle(ctx, pubOf(newKey), true); err != nil {
		t.Fatal(err)
	}
	fresh := f.emitRuns(t, 1, 1)
	var records int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM journal_records`).Scan(&records); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := f.obs.Step(ctx)
		if errors.Is(err, journalapp.ErrKeyRetired) {
			if !strings.Contains(err.Error(), journal.KeyID(pubOf(f.key))) {
				t.Errorf("the refusal does not name the key: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the observer with the retired key never refused to sign")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var after int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM journal_records`).Scan(&after); err != nil || after != records {
		t.Fatalf("the refused round appended %d records (%v)", after-records, err)
	}
	obs, err := journalapp.NewObserver(postgres.NewJournalTransactor(f.pool), newKey, time.Now, journalapp.ObserverConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.obs = obs
	f.drain(t)
	for _, id := range []string{old[0], fresh[0]} {
		if v := f.verifyOne(t, id); v.Result.Result != journal.VerdictValid {
			t.Errorf("after rotation, %s: %+v", id, v)
		}
	}
	j, err := postgres.NewJournalReader(f.pool).Journal(ctx, journalSession, fresh[0])
	if err != nil || j.Checkpoint.KeyID != journal.KeyID(pubOf(newKey)) {
		t.Fatalf("the new checkpoint names key %q (%v), want %s", j.Checkpoint.KeyID, err, journal.KeyID(pubOf(newKey)))
	}
	j, err = postgres.NewJournalReader(f.pool).Journal(ctx, journalSession, old[0])
	if err != nil || j.Checkpoint.KeyID != journal.KeyID(pubOf(f.key)) {
		t.Fatalf("the old checkpoint names key %q (%v)", j.Checkpoint.KeyID, err)
	}
}

// TestJournalKeysMigrationBackfill: on a database whose checkpoints were
// signed by two keys before the registry, the migration lists both: the
// signer of the latest checkpoint current, the other retired.
func TestJournalKeysMigrationBackfill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if err := postgres.MigrateDownTo(ctx, pool, 20); err != nil { // the schema before the registry
		t.Fatal(err)
	}
	a, b := pubOf(seedKey(7)), pubOf(seedKey(8))
	for i, k := range []ed25519.PublicKey{a, b, a, b, b} {
		if _, err := pool.Exec(ctx, `INSERT INTO journal_checkpoints (execution_id, sequence, digest, signature, public_key, signed_at)
			VALUES ('0193b000-0000-7000-8000-000000000001', $1, 'sha256:x', '\x00', $2, now() + make_interval(secs => $3))`, i+1, []byte(k), float64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := postgres.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	keys, err := postgres.NewJournalKeys(pool).Keys(ctx)
	if err != nil || len(keys) != 2 || keys[0].KeyID != journal.KeyID(b) || keys[0].Status != journalapp.KeyCurrent ||
		keys[1].KeyID != journal.KeyID(a) || keys[1].Status != journalapp.KeyRetired || keys[1].RetiredAt.IsZero() {
		t.Fatalf("backfilled registry: %+v %v", keys, err)
	}
	// The instance with the latest signer starts as before; the other is told what to do.
	uc := journalapp.NewRegisterKey(postgres.NewJournalKeys(pool), testHint, time.Now)
	if r, err := uc.Handle(ctx, b, false); err != nil || r.Registered {
		t.Errorf("the latest signer: %+v %v", r, err)
	}
	if _, err := uc.Handle(ctx, a, false); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("the older signer: %v, want a conflict", err)
	}
}
