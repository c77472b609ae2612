package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/supervisorapp"
)

// applySupervisors stores, as bootstrap's use case does, a rules
// supervisor of "own", an http supervisor of the server with a secret
// header under it, and a rules supervisor of "foreign".
func applySupervisors(t *testing.T, e *testEnv) {
	t.Helper()
	apply := supervisorapp.NewApplySupervisor(postgres.NewSupervisorTransactor(e.admin), nil, time.Now)
	for _, d := range []struct{ id, doc string }{
		{"ops", `{"name":"Ops agent","engine":{"type":"http","settings":{"url":"https://agent.example.com/y",
			"secretHeaders":{"Authorization":"Bearer sup3r-s3cret-header"}}},"owns":["server"]}`},
		{"guard", `{"name":"Failure guard","parentId":"ops","engine":{"type":"rules","settings":{"rules":[
			{"id":"pause-on-repeated-failure","when":{"event":"NodeStatusChanged","status":"FAILURE","count":3,"withinSeconds":60},
			 "then":{"command":"PauseWorkflow"}}]}},"owns":["session:own"]}`},
		{"foreign-guard", `{"name":"Foreign","engine":{"type":"process","settings":{"command":"/opt/yukta/decide"}},"owns":["session:foreign"]}`},
	} {
		if _, err := apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: d.id, Document: []byte(d.doc), Actor: "key:admin", Channel: "rest"}); err != nil {
			t.Fatalf("apply %s: %v", d.id, err)
		}
	}
}

func TestSupervisorTools(t *testing.T) {
	t.Parallel()
	ts, e := newTestServer(t)
	applySupervisors(t, e)
	viewer := connect(t, ts.URL, secretOf("viewer"))

	var list SupervisorList
	decode(t, callOK(t, viewer, "list_supervisors", nil), &list)
	var ids []string
	for _, s := range list.Supervisors {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "foreign-guard,guard,ops" || list.Note != "" {
		t.Fatalf("list_supervisors: %+v, want foreign-guard, guard, ops in id order", list)
	}
	if g := list.Supervisors[1]; g.Engine != "rules" || g.ParentID != "ops" || g.Owns[0] != "session:own" || !g.Enabled || g.UpdatedBy != "key:admin" {
		t.Errorf("guard summary: %+v", g)
	}

	res := callOK(t, viewer, "get_supervisor", map[string]any{"supervisorId": "ops"})
	var ops SupervisorDetails
	decode(t, res, &ops)
	if strings.Contains(text(res), "sup3r") || ops.Settings["secretHeaders"].(map[string]any)["Authorization"] != "***" ||
		len(ops.AllowedCommands) != 21 || ops.CreatedAt == "" {
		t.Fatalf("get_supervisor ops: %s, want the secret masked and every command allowed", text(res))
	}
	var guard SupervisorDetails
	decode(t, callOK(t, viewer, "get_supervisor", map[string]any{"supervisorId": "guard"}), &guard)
	rules, _ := guard.Settings["rules"].([]any)
	if len(rules) != 1 || guard.ParentID != "ops" {
		t.Fatalf("get_supervisor guard: %+v", guard)
	}

	// A limited key sees the supervisors of its sessions alone; any other
	// reads as one that does not exist.
	limited := connect(t, ts.URL, secretOf("limited"))
	decode(t, callOK(t, limited, "list_supervisors", nil), &list)
	if len(list.Supervisors) != 1 || list.Supervisors[0].ID != "guard" {
		t.Fatalf("limited list_supervisors: %+v, want guard only", list)
	}
	hidden := call(t, limited, "get_supervisor", map[string]any{"supervisorId": "ops"})
	unknown := call(t, limited, "get_supervisor", map[string]any{"supervisorId": "nope"})
	if !hidden.IsError || text(hidden) != strings.ReplaceAll(text(unknown), "nope", "ops") ||
		!strings.HasPrefix(text(unknown), "Supervisor not found: nope. Use list_supervisors") {
		t.Fatalf("limited get_supervisor: hidden %q, unknown %q; want the same not-found answer", text(hidden), text(unknown))
	}

	// A server without the credential use cases says credentials are not
	// enabled, and changes nothing (tools_credentials_test.go drives them).
	admin := connect(t, ts.URL, secretOf("admin"))
	before := e.rowCounts(t)
	for _, tool := range []string{"create_credential", "revoke_credential"} {
		res := call(t, admin, tool, map[string]any{"supervisorId": "guard"})
		if !res.IsError || !strings.HasPrefix(text(res), "Supervisor credentials are not enabled on this server.") {
			t.Errorf("%s on guard: %q", tool, text(res))
		}
	}
	e.assertRowsUnchanged(t, before, "the credential tools")
	if strings.Contains(text(callOK(t, admin, "get_supervisor", map[string]any{"supervisorId": "guard"})), `"credential"`) {
		t.Errorf("get_supervisor shows a credential on a server without credentials")
	}
}

func TestSupervisorCatalogueTools(t *testing.T) {
	t.Parallel()
	ts, _ := newTestServer(t)
	cs := connect(t, ts.URL, secretOf("viewer"))
	var empty SupervisorList
	decode(t, callOK(t, cs, "list_supervisors", nil), &empty)
	if len(empty.Supervisors) != 0 || !strings.Contains(empty.Note, "PUT /api/supervisors/{id}") {
		t.Fatalf("empty list_supervisors: %+v", empty)
	}
	var eng EngineDetails
	decode(t, callOK(t, cs, "get_supervisor_engine", map[string]any{"type": "rules"}), &eng)
	for _, want := range []string{"`schemaVersion`", "`rules`", "event, execution, now", "command, actor, workflow, now", "PUT /api/supervisors/example-rules"} {
		if !strings.Contains(eng.Usage, want) {
			t.Errorf("rules usage lacks %q:\n%s", want, eng.Usage)
		}
	}
	res := call(t, cs, "get_supervisor_engine", map[string]any{"type": "cron"})
	if !res.IsError || !strings.Contains(text(res), "Use list_supervisor_engines") {
		t.Errorf("unknown engine: %q", text(res))
	}
	var presets PresetList
	decode(t, callOK(t, cs, "list_supervisor_presets", map[string]any{"engine": "rules"}), &presets)
	if len(presets.Presets) != 4 {
		t.Fatalf("presets: %d, want 4", len(presets.Presets))
	}
	fg := presets.Presets[0]
	if fg.Name != "failure-guard" || len(fg.Parameters) != 3 || fg.Parameters[0].Name != "count" || fg.Parameters[0].Maximum != 10000 {
		t.Errorf("failure-guard: %+v", fg)
	}
}
