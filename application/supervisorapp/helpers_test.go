package supervisorapp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/yukta/yukta/adapters/cel"
	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// The use cases are tested over the real store on a throwaway PostgreSQL:
// one cluster per test binary, one migrated database per test.
func TestMain(m *testing.M) { pgtest.Main(m) }

// env is the use cases over one fresh database, wired as bootstrap wires
// them, with a clock the test moves.
type env struct {
	pool   *pgxpool.Pool
	store  *postgres.SupervisorStore
	apply  *supervisorapp.ApplySupervisor
	get    *supervisorapp.GetSupervisor
	list   *supervisorapp.ListSupervisors
	delete *supervisorapp.DeleteSupervisor
	now    time.Time
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := pgtest.NewPool(t)
	e := &env{pool: pool, store: postgres.NewSupervisorStore(pool), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	clock := func() time.Time { return e.now }
	tx := postgres.NewSupervisorTransactor(pool)
	e.apply = supervisorapp.NewApplySupervisor(tx, checker(t), clock)
	e.get = supervisorapp.NewGetSupervisor(e.store)
	e.list = supervisorapp.NewListSupervisors(e.store)
	e.delete = supervisorapp.NewDeleteSupervisor(tx, nil, clock) // no run is held here: no resume
	return e
}

// checker is the CEL checker bootstrap wires.
func checker(t *testing.T) supervisor.ExprChecker {
	t.Helper()
	c, err := cel.NewConditions()
	if err != nil {
		t.Fatal(err)
	}
	return c.Check
}

// put applies doc as id, by key:admin over rest, and fails the test on an
// error.
func (e *env) put(t *testing.T, id, doc string) supervisorapp.ApplyResult {
	t.Helper()
	res, err := e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: id, Document: []byte(doc), Actor: "key:admin", Channel: "rest"})
	if err != nil {
		t.Fatalf("apply %s: %v", id, err)
	}
	return res
}

// rows counts the rows of a table.
func (e *env) rows(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// event is one supervisor event of the outbox.
type event struct {
	typ, session, actor, channel, data string
}

func (e *env) events(t *testing.T) []event {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT type, session_id, actor, channel, data::text FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var ev event
		if err := rows.Scan(&ev.typ, &ev.session, &ev.actor, &ev.channel, &ev.data); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// guardDoc is the seed's example: a rules supervisor that pauses a
// workflow after three node failures within 60 seconds.
const guardDoc = `{"name":"Failure guard","engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
	{"id":"pause-on-repeated-failure",
	 "when":{"event":"NodeStatusChanged","status":"FAILURE","count":3,"withinSeconds":60},
	 "then":{"command":"PauseWorkflow"}}]}},
	"owns":["session:ci"]%s}`

// guard is guardDoc with extra members (",\"parentId\":\"ops\"").
func guard(extra string) string { return fmt.Sprintf(guardDoc, extra) }

// agentDoc is an http supervisor with a secret header.
func agentDoc(secret, extra string) string {
	return fmt.Sprintf(`{"name":"Agent","engine":{"type":"http","settings":{"url":"https://agent.example.com/yukta",
		"headers":{"X-Team":"ops"},"secretHeaders":{"Authorization":%q}}},"owns":["server"]%s}`, secret, extra)
}

// violations returns "path: message" lines of a validation error, or fails.
func violations(t *testing.T, err error) []string {
	t.Helper()
	ve, ok := errors.AsType[*fault.ValidationError](err)
	if !ok {
		t.Fatalf("error: got %v (%T), want a *fault.ValidationError", err, err)
	}
	var out []string
	for _, v := range ve.Violations {
		out = append(out, v.Path+": "+v.Message)
	}
	return out
}

// hasViolation reports whether one line starts with path and holds words.
func hasViolation(lines []string, path, words string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, path+": ") && strings.Contains(l, words) {
			return true
		}
	}
	return false
}
