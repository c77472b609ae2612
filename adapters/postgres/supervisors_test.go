package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestSupervisorStoreRoundTrip: what Put stores, Get restores field for
// field, numbers with their exact digits and secrets unmasked; the audit
// fields say who changed it, and Put tells created from replaced.
func TestSupervisorStoreRoundTrip(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	doc := `{"id":"agent","name":"Agent","engine":{"type":"http","settings":{"url":"https://a.example.com/y","timeoutMs":2500,
		"headers":{"X-N":"9007199254740993"},"secretHeaders":{"Authorization":"Bearer t0ken"}}},
		"owns":["workflow:ci/build","session:web"],"allowedCommands":["ResumeWorkflow","PauseWorkflow"],"reviews":["RestartWorkflow"],"enabled":false}`
	sup, err := supervisor.Parse([]byte(doc), supervisor.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	store := postgres.NewSupervisorStore(pool)
	var created bool
	err = postgres.NewSupervisorTransactor(pool).WithinTx(t.Context(), func(ctx context.Context, st supervisorapp.Stores) error {
		created, err = st.Supervisors.Put(ctx, sup, supervisorapp.Change{At: at, Actor: "key:admin", Channel: "rest"})
		return err
	})
	if err != nil || !created {
		t.Fatalf("Put: created %v, %v", created, err)
	}
	got, err := store.Get(t.Context(), "agent")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sup.MarshalJSON()
	back, _ := got.Supervisor.MarshalJSON()
	if string(back) != string(want) {
		t.Fatalf("round trip:\n got  %s\n want %s", back, want)
	}
	if !strings.Contains(string(back), `"timeoutMs":2500`) || !strings.Contains(string(back), "Bearer t0ken") {
		t.Fatalf("stored document lost a number or the secret: %s", back)
	}
	if !got.CreatedAt.Equal(at) || !got.UpdatedAt.Equal(at) || got.UpdatedBy != "key:admin" || got.UpdatedVia != "rest" {
		t.Fatalf("audit fields: %+v", got)
	}
	err = postgres.NewSupervisorTransactor(pool).WithinTx(t.Context(), func(ctx context.Context, st supervisorapp.Stores) error {
		created, err = st.Supervisors.Put(ctx, sup, supervisorapp.Change{At: at.Add(time.Hour), Actor: "key:ops", Channel: "mcp"})
		return err
	})
	if err != nil || created {
		t.Fatalf("second Put: created %v, %v; want replaced", created, err)
	}
	if got, _ := store.Get(t.Context(), "agent"); !got.CreatedAt.Equal(at) || !got.UpdatedAt.Equal(at.Add(time.Hour)) || got.UpdatedBy != "key:ops" {
		t.Fatalf("after replace: %+v", got)
	}
	if _, err := store.Get(t.Context(), "nobody"); !errors.Is(err, supervisor.ErrSupervisorNotFound) {
		t.Fatalf("Get unknown: %v", err)
	}
	if err := store.Delete(t.Context(), "nobody"); !errors.Is(err, supervisor.ErrSupervisorNotFound) {
		t.Fatalf("Delete unknown: %v", err)
	}
}
