package supervisorapp_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestReadsMaskAndFilter: lists come in id order with secrets masked; a
// session-limited caller sees only supervisors acting within its sessions
// alone, and any other reads exactly as one that does not exist.
func TestReadsMaskAndFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put(t, "server-agent", agentDoc("Bearer s3cret", ""))
	e.put(t, "ci-guard", guard(""))
	e.put(t, "mixed", `{"name":"Mixed","engine":{"type":"process","settings":{"command":"/opt/yukta/decide"}},"owns":["session:ci","workflow:web/deploy"]}`)
	e.put(t, "web-build", `{"name":"Web","engine":{"type":"process","settings":{"command":"/opt/yukta/decide"}},"owns":["workflow:web/build"]}`)
	e.put(t, "idle", `{"name":"Idle","engine":{"type":"process","settings":{"command":"/opt/yukta/decide"}}}`)

	all, err := e.list.Handle(t.Context(), supervisorapp.ListInput{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.Supervisor.ID())
		if s.Supervisor.ID() == "server-agent" {
			if v := s.Supervisor.Settings()["secretHeaders"].(map[string]any)["Authorization"]; v != "***" {
				t.Errorf("list shows the secret: %v", v)
			}
		}
	}
	if want := []string{"ci-guard", "idle", "mixed", "server-agent", "web-build"}; !slices.Equal(ids, want) {
		t.Fatalf("list: got %v, want %v", ids, want)
	}

	for _, c := range []struct {
		only []string
		want []string
	}{
		{[]string{"ci"}, []string{"ci-guard"}},
		{[]string{"web"}, []string{"web-build"}},
		{[]string{"ci", "web"}, []string{"ci-guard", "mixed", "web-build"}},
	} {
		got, err := e.list.Handle(t.Context(), supervisorapp.ListInput{Only: c.only})
		if err != nil {
			t.Fatal(err)
		}
		ids = nil
		for _, s := range got {
			ids = append(ids, s.Supervisor.ID())
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("list for %v: got %v, want %v", c.only, ids, c.want)
		}
	}

	_, hidden := e.get.Handle(t.Context(), supervisorapp.GetInput{ID: "server-agent", Only: []string{"ci"}})
	_, unknown := e.get.Handle(t.Context(), supervisorapp.GetInput{ID: "nobody", Only: []string{"ci"}})
	if !errors.Is(hidden, supervisor.ErrSupervisorNotFound) || hidden.Error() != `supervisor "server-agent" does not exist; GET /api/supervisors (MCP: list_supervisors) lists the supervisors` {
		t.Errorf("hidden supervisor: got %v, want the not-found answer", hidden)
	}
	if !errors.Is(unknown, supervisor.ErrSupervisorNotFound) || unknown.Error() != `supervisor "nobody" does not exist; GET /api/supervisors (MCP: list_supervisors) lists the supervisors` {
		t.Errorf("unknown supervisor: got %v", unknown)
	}
	got, err := e.get.Handle(t.Context(), supervisorapp.GetInput{ID: "ci-guard", Only: []string{"ci"}})
	if err != nil || got.Supervisor.ID() != "ci-guard" || got.UpdatedBy != "key:admin" {
		t.Fatalf("visible supervisor: %+v, %v", got, err)
	}
}
