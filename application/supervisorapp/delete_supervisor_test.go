package supervisorapp_test

import (
	"errors"
	"testing"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

func TestDeleteRefusesAParentAndNamesItsChildren(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put(t, "ops", agentDoc("Bearer t", ""))
	e.put(t, "team-b", guard(`,"parentId":"ops"`))
	e.put(t, "team-a", guard(`,"parentId":"ops"`))
	_, err := e.delete.Handle(t.Context(), supervisorapp.DeleteInput{ID: "ops", Actor: "key:admin", Channel: "rest"})
	const want = `delete supervisor "ops": supervisor "ops" is the parent of supervisors "team-a" and "team-b"; ` +
		`give them another parentId (or none) or delete them first, then delete "ops"`
	if !errors.Is(err, supervisorapp.ErrSupervisorHasChildren) || !errors.Is(err, fault.ErrConflict) || err.Error() != want {
		t.Fatalf("delete a parent: got %v, want a conflict:\n%s", err, want)
	}
	if n := e.rows(t, "supervisors"); n != 3 {
		t.Fatalf("supervisors: got %d rows, want 3", n)
	}
	for _, id := range []string{"team-a", "team-b", "ops"} {
		if _, err := e.delete.Handle(t.Context(), supervisorapp.DeleteInput{ID: id, Actor: "key:admin", Channel: "cli (claimed)"}); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	if n := e.rows(t, "supervisors"); n != 0 {
		t.Fatalf("supervisors: got %d rows, want none", n)
	}
	evs := e.events(t)
	last := evs[len(evs)-1]
	if len(evs) != 6 || last.typ != supervisorapp.EventSupervisorDeleted || last.actor != "key:admin" || last.channel != "cli (claimed)" ||
		last.data != `{"supervisorId": "ops"}` {
		t.Fatalf("events: %d, last %+v; want 3 applied and 3 deleted, the last ops by key:admin", len(evs), last)
	}
}

func TestDeleteUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.delete.Handle(t.Context(), supervisorapp.DeleteInput{ID: "ghost"})
	if !errors.Is(err, supervisor.ErrSupervisorNotFound) {
		t.Fatalf("delete unknown: got %v, want not found", err)
	}
	if n := e.rows(t, "events"); n != 0 {
		t.Fatalf("events: got %d, want none", n)
	}
}
