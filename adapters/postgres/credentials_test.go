package postgres_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// putSupervisor stores a minimal supervisor with id.
func putSupervisor(t *testing.T, pool *pgxpool.Pool, id string) {
	t.Helper()
	sup, err := supervisor.Parse([]byte(`{"id":"`+id+`","name":"Agent","engine":{"type":"http","settings":{}},"owns":["server"]}`), supervisor.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = postgres.NewSupervisorTransactor(pool).WithinTx(t.Context(), func(ctx context.Context, st supervisorapp.Stores) error {
		_, err := st.Supervisors.Put(ctx, sup, supervisorapp.Change{At: time.Now(), Actor: "key:admin", Channel: "rest"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// putCredential issues and stores a credential for id and returns it with
// its token.
func putCredential(t *testing.T, pool *pgxpool.Pool, id string, spec supervisor.CredentialSpec) (supervisor.Credential, supervisor.Token) {
	t.Helper()
	c, tok, err := supervisor.IssueCredential(id, spec, rand.Reader, time.Date(2026, 3, 1, 12, 0, 0, 987654321, time.UTC), "key:admin", "rest")
	if err != nil {
		t.Fatal(err)
	}
	err = postgres.NewCredentialTransactor(pool).WithinTx(t.Context(), func(ctx context.Context, st supervisorapp.CredentialStores) error {
		return st.Credentials.Put(ctx, c)
	})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return c, tok
}

func sameCredential(t *testing.T, what string, got, want supervisor.Credential) {
	t.Helper()
	if got.SupervisorID() != want.SupervisorID() || got.Hash() != want.Hash() || got.Hint() != want.Hint() ||
		!got.CreatedAt().Equal(want.CreatedAt()) || !got.ExpiresAt().Equal(want.ExpiresAt()) || got.CreatedBy() != want.CreatedBy() ||
		got.CreatedVia() != want.CreatedVia() || strings.Join(got.AllowedAddressStrings(), ",") != strings.Join(want.AllowedAddressStrings(), ",") {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// TestCredentialStore: what Put stores, Get and CredentialByHash restore;
// a second Put replaces the first in place (the old hash finds nothing);
// only the 32-byte hash is stored; Delete and the supervisor's delete
// remove it.
func TestCredentialStore(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	store := postgres.NewCredentialStore(pool)
	putSupervisor(t, pool, "agent")
	first, firstTok := putCredential(t, pool, "agent", supervisor.CredentialSpec{TTLHours: 2, AllowedAddresses: []string{"10.1.2.3/8", "2001:db8::1"}})

	got, err := store.Credential(t.Context(), "agent")
	if err != nil {
		t.Fatal(err)
	}
	sameCredential(t, "Credential", got, first)
	if strings.Join(got.AllowedAddressStrings(), ",") != "10.0.0.0/8,2001:db8::1/128" || !got.LastUsedAt().IsZero() {
		t.Fatalf("stored addresses %v, last used %v", got.AllowedAddressStrings(), got.LastUsedAt())
	}
	byHash, err := store.CredentialByHash(t.Context(), firstTok.Hash())
	if err != nil {
		t.Fatal(err)
	}
	sameCredential(t, "CredentialByHash", byHash, first)

	// Nothing stored holds the token: the row read as text has neither the
	// token nor its secret part, and the hash is 32 bytes.
	var row string
	var hashLen int
	if err := pool.QueryRow(t.Context(), `SELECT row_to_json(c)::text, octet_length(token_hash) FROM supervisor_credentials c`).Scan(&row, &hashLen); err != nil {
		t.Fatal(err)
	}
	if secret := firstTok.Reveal()[len(firstTok.Hint()):]; strings.Contains(row, secret) || hashLen != 32 {
		t.Fatalf("stored row %s (hash %d bytes): want no token and a 32-byte hash", row, hashLen)
	}

	// Rotation: the second Put replaces the row; the first hash is gone.
	second, secondTok := putCredential(t, pool, "agent", supervisor.CredentialSpec{})
	if _, err := store.CredentialByHash(t.Context(), firstTok.Hash()); !errors.Is(err, supervisor.ErrCredentialNotFound) {
		t.Fatalf("old token after rotation: %v, want not found", err)
	}
	if got, err := store.CredentialByHash(t.Context(), secondTok.Hash()); err != nil || len(got.AllowedAddresses()) != 0 {
		t.Fatalf("new token: %+v, %v", got, err)
	} else {
		sameCredential(t, "rotated", got, second)
	}
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM supervisor_credentials`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after rotation: %d, %v; want 1", n, err)
	}

	// Last use moves forward only.
	at := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	for _, when := range []time.Time{at, at.Add(-time.Hour)} {
		if err := store.MarkCredentialUsed(t.Context(), secondTok.Hash(), when); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := store.Credential(t.Context(), "agent"); !got.LastUsedAt().Equal(at) {
		t.Fatalf("last used %v, want %v", got.LastUsedAt(), at)
	}
	// A rotation forgets it: the new token has not been used.
	putCredential(t, pool, "agent", supervisor.CredentialSpec{})
	if got, _ := store.Credential(t.Context(), "agent"); !got.LastUsedAt().IsZero() {
		t.Fatalf("last used after rotation %v, want never", got.LastUsedAt())
	}

	// Delete, then delete again.
	tx := postgres.NewCredentialTransactor(pool)
	del := func() error {
		return tx.WithinTx(t.Context(), func(ctx context.Context, st supervisorapp.CredentialStores) error {
			return st.Credentials.Delete(ctx, "agent")
		})
	}
	if err := del(); err != nil {
		t.Fatal(err)
	}
	if err := del(); !errors.Is(err, supervisor.ErrCredentialNotFound) || !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("second delete: %v, want not found", err)
	}
	if _, err := store.Credential(t.Context(), "agent"); !errors.Is(err, supervisor.ErrCredentialNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestCredentialGoesWithItsSupervisor(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	putSupervisor(t, pool, "agent")
	putSupervisor(t, pool, "other")
	_, tok := putCredential(t, pool, "agent", supervisor.CredentialSpec{})
	_, otherTok := putCredential(t, pool, "other", supervisor.CredentialSpec{})
	err := postgres.NewSupervisorTransactor(pool).WithinTx(t.Context(), func(ctx context.Context, st supervisorapp.Stores) error {
		return st.Supervisors.Delete(ctx, "agent")
	})
	if err != nil {
		t.Fatal(err)
	}
	store := postgres.NewCredentialStore(pool)
	if _, err := store.CredentialByHash(t.Context(), tok.Hash()); !errors.Is(err, supervisor.ErrCredentialNotFound) {
		t.Fatalf("credential of a deleted supervisor: %v, want not found", err)
	}
	if _, err := store.CredentialByHash(t.Context(), otherTok.Hash()); err != nil {
		t.Fatalf("the other supervisor's credential: %v", err)
	}
	// A credential for a supervisor that does not exist is refused by the
	// database too.
	c, _, _ := supervisor.IssueCredential("ghost", supervisor.CredentialSpec{}, rand.Reader, time.Now(), "", "")
	err = postgres.NewCredentialTransactor(pool).WithinTx(t.Context(), func(ctx context.Context, st supervisorapp.CredentialStores) error {
		return st.Credentials.Put(ctx, c)
	})
	if !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("credential of a supervisor that does not exist: %v, want a conflict", err)
	}
}

// TestCredentialLookupIsAnIndexedEquality: the agent API's lookup is an
// index scan of the unique index on token_hash, never a scan of the table.
func TestCredentialLookupIsAnIndexedEquality(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	putSupervisor(t, pool, "agent")
	_, tok := putCredential(t, pool, "agent", supervisor.CredentialSpec{})
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(t.Context(), `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(context.Background(), `RESET enable_seqscan`) }()
	h := tok.Hash()
	rows, err := conn.Query(t.Context(), `EXPLAIN SELECT 1 FROM supervisor_credentials WHERE token_hash = $1`, h[:])
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if !strings.Contains(plan.String(), "supervisor_credentials_token_hash_key") || strings.Contains(plan.String(), "Seq Scan") {
		t.Fatalf("lookup plan:\n%s\nwant an index scan of supervisor_credentials_token_hash_key", plan.String())
	}
}
