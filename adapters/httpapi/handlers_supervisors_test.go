package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// memSupervisors is an in-memory supervisor store: the ports of
// supervisorapp, so the REST tests run the real use cases.
type memSupervisors struct {
	mu     sync.Mutex
	byID   map[string]supervisorapp.Summary
	events []string // "type id actor channel"
}

func (m *memSupervisors) WithinTx(ctx context.Context, fn func(context.Context, supervisorapp.Stores) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	saved, events := make(map[string]supervisorapp.Summary, len(m.byID)), slices.Clone(m.events)
	for k, v := range m.byID {
		saved[k] = v
	}
	if err := fn(ctx, supervisorapp.Stores{Supervisors: memTx{m}, Audit: memTx{m}, Holds: memTx{m}, Remains: memTx{m}}); err != nil {
		m.byID, m.events = saved, events // roll back
		return err
	}
	return nil
}

func (m *memSupervisors) Supervisor(_ context.Context, id string) (supervisorapp.Summary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return memTx{m}.Get(context.Background(), id)
}

func (m *memSupervisors) Supervisors(ctx context.Context) ([]supervisorapp.Summary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return memTx{m}.List(ctx)
}

// memTx is the store inside WithinTx (the lock is held).
type memTx struct{ m *memSupervisors }

// HeldRuns: no run exists here, so none is held.
func (memTx) HeldRuns(context.Context, string, int) ([]supervisorapp.RunInfo, error) { return nil, nil }

func (memTx) ChangeHolds(_ context.Context, id string,
	_ func(supervisor.RunHolds, supervisorapp.RunInfo) (supervisor.RunHolds, []executionapp.Event, error)) (supervisor.RunHolds, error) {
	return supervisor.RunHolds{}, fault.Newf(executionapp.ErrExecutionNotFound, "Execution not found: %s.", id)
}

// Forget: nothing is kept under an id here.
func (memTx) Forget(context.Context, string) (supervisorapp.Forgotten, error) {
	return supervisorapp.Forgotten{}, nil
}

func (t memTx) Get(_ context.Context, id string) (supervisorapp.Summary, error) {
	s, ok := t.m.byID[id]
	if !ok {
		return supervisorapp.Summary{}, supervisorapp.NotFound(id)
	}
	return s, nil
}

func (t memTx) GetForUpdate(ctx context.Context, id string) (supervisorapp.Summary, error) {
	return t.Get(ctx, id)
}

func (t memTx) Put(_ context.Context, s supervisor.Supervisor, ch supervisorapp.Change) (bool, error) {
	prev, ok := t.m.byID[s.ID()]
	created := ch.At
	if ok {
		created = prev.CreatedAt
	}
	t.m.byID[s.ID()] = supervisorapp.Summary{Supervisor: s, CreatedAt: created, UpdatedAt: ch.At, UpdatedBy: ch.Actor, UpdatedVia: ch.Channel}
	return !ok, nil
}

func (t memTx) Delete(_ context.Context, id string) error {
	if _, ok := t.m.byID[id]; !ok {
		return supervisorapp.NotFound(id)
	}
	delete(t.m.byID, id)
	return nil
}

func (t memTx) List(context.Context) ([]supervisorapp.Summary, error) {
	out := make([]supervisorapp.Summary, 0, len(t.m.byID))
	for _, s := range t.m.byID {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b supervisorapp.Summary) int { return strings.Compare(a.Supervisor.ID(), b.Supervisor.ID()) })
	return out, nil
}

func (t memTx) SupervisorChanged(_ context.Context, typ, id string, ch supervisorapp.Change, _ map[string]any) error {
	t.m.events = append(t.m.events, strings.Join([]string{typ, id, ch.Actor, ch.Channel}, " "))
	return nil
}

const (
	supAdminKey   = "sup-admin-secret-0123456789abcdef"
	supViewerKey  = "sup-viewer-secret-0123456789abcde"
	supLimitedKey = "sup-limited-secret-0123456789abcd"
	supLimitedAdm = "sup-limadmin-secret-0123456789abc"
)

// supervisorServer is a keyed server whose supervisor routes run the real
// use cases over the in-memory store (and no CEL checker).
func supervisorServer(t *testing.T) (http.Handler, *memSupervisors) {
	t.Helper()
	var specs []access.KeySpec
	for _, k := range []struct {
		name     string
		role     access.Role
		sessions []string
		secret   string
	}{
		{"admin", access.Admin, nil, supAdminKey},
		{"viewer", access.Viewer, nil, supViewerKey},
		{"dash", access.Viewer, []string{"ci"}, supLimitedKey},
		{"root", access.Admin, []string{"ci"}, supLimitedAdm},
	} {
		s, err := access.NewKeySpec(k.name, k.role, k.sessions, k.secret)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, s)
	}
	ring, err := access.NewKeyring(specs)
	if err != nil {
		t.Fatal(err)
	}
	m := &memSupervisors{byID: map[string]supervisorapp.Summary{}}
	clock := func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	uc := UseCases{Supervisors: SupervisorUseCases{
		Apply: supervisorapp.NewApplySupervisor(m, nil, clock), Get: supervisorapp.NewGetSupervisor(m),
		List: supervisorapp.NewListSupervisors(m), Delete: supervisorapp.NewDeleteSupervisor(m, nil, clock),
	}}
	srv, err := New(Config{Addr: "127.0.0.1:0", Security: Security{Keys: authn.Keys{API: authn.NewRing(ring)}}}, uc, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler(), m
}

const (
	restGuard = `{"name":"Failure guard","engine":{"type":"rules","settings":{"schemaVersion":1,"rules":[
		{"id":"pause-on-repeated-failure","when":{"event":"NodeStatusChanged","status":"FAILURE","count":3,"withinSeconds":60},
		 "then":{"command":"PauseWorkflow"}}]}},"owns":["session:ci"]`
	restAgent = `{"name":"Agent","engine":{"type":"http","settings":{"url":"https://agent.example.com/y","timeoutMs":2500,
		"secretHeaders":{"Authorization":"Bearer rest-s3cret"}}},"owns":["server"]}`
)

// supDoc is the decoded answer of a supervisor route.
type supDoc struct {
	ID     string `json:"id"`
	Engine struct {
		Type     string         `json:"type"`
		Settings map[string]any `json:"settings"`
	} `json:"engine"`
	Owns            []string `json:"owns"`
	ParentID        string   `json:"parentId"`
	AllowedCommands []string `json:"allowedCommands"`
	Reviews         []string `json:"reviews"`
	Enabled         bool     `json:"enabled"`
}

func decodeSup(t *testing.T, a answer, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(a.body), v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

func TestSupervisorRoutes(t *testing.T) {
	h, m := supervisorServer(t)
	admin := []string{"X-API-Key", supAdminKey}

	a := send(h, "PUT", "/api/supervisors/guard", jsonCT, []byte(restGuard+`}`), admin...)
	var doc supDoc
	decodeSup(t, a, &doc)
	if a.status != http.StatusCreated || doc.ID != "guard" || len(doc.AllowedCommands) != 21 || doc.Reviews == nil || !doc.Enabled ||
		doc.Engine.Settings["rules"] == nil || !strings.Contains(a.body, `"withinSeconds":60`) {
		t.Fatalf("create: %d %s, want 201 with every default explicit", a.status, a.body)
	}
	a = send(h, "PUT", "/api/supervisors/ops", jsonCT, []byte(restAgent), append(admin, "Yukta-Channel", "cli")...)
	if a.status != http.StatusCreated || strings.Contains(a.body, "rest-s3cret") || !strings.Contains(a.body, `"Authorization":"***"`) ||
		!strings.Contains(a.body, `"timeoutMs":2500`) {
		t.Fatalf("create agent: %d %s, want 201 with the secret masked and the number exact", a.status, a.body)
	}
	if got := m.events[len(m.events)-1]; got != "SupervisorApplied ops key:admin "+ClaimedCLI {
		t.Errorf("event: %q, want the claimed cli channel", got)
	}
	a = send(h, "PUT", "/api/supervisors/guard", jsonCT, []byte(restGuard+`,"parentId":"ops"}`), admin...)
	if a.status != http.StatusOK {
		t.Fatalf("replace: %d %s, want 200", a.status, a.body)
	}

	// Reads: VIEWER may; secrets masked; the document read can be sent back.
	viewer := []string{"X-API-Key", supViewerKey}
	a = send(h, "GET", "/api/supervisors/ops", "", nil, viewer...)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"Authorization":"***"`) {
		t.Fatalf("get: %d %s", a.status, a.body)
	}
	if back := send(h, "PUT", "/api/supervisors/ops", jsonCT, []byte(a.body), admin...); back.status != http.StatusOK {
		t.Fatalf("sending back what was read: %d %s, want 200", back.status, back.body)
	}
	if v := m.byID["ops"].Supervisor.Settings()["secretHeaders"].(map[string]any)["Authorization"]; v != "Bearer rest-s3cret" {
		t.Fatalf("stored secret after sending *** back: %v", v)
	}
	a = send(h, "GET", "/api/supervisors", "", nil, viewer...)
	var list struct {
		Supervisors []struct {
			ID, Engine, ParentID, UpdatedBy, UpdatedVia string
			CreatedAt                                   time.Time
		}
	}
	decodeSup(t, a, &list)
	if a.status != http.StatusOK || len(list.Supervisors) != 2 || list.Supervisors[0].ID != "guard" || list.Supervisors[0].ParentID != "ops" ||
		list.Supervisors[1].UpdatedBy != "key:admin" || list.Supervisors[0].CreatedAt.IsZero() {
		t.Fatalf("list: %d %s", a.status, a.body)
	}

	// Writes need ADMIN, and a limited ADMIN's writes name no session.
	for _, key := range []string{supViewerKey, supLimitedAdm} {
		if a := send(h, "PUT", "/api/supervisors/x", jsonCT, []byte(restAgent), "X-API-Key", key); a.status != http.StatusForbidden {
			t.Errorf("PUT with %s: %d %s, want 403", key[:12], a.status, a.body)
		}
		if a := send(h, "DELETE", "/api/supervisors/guard", "", nil, "X-API-Key", key); a.status != http.StatusForbidden {
			t.Errorf("DELETE with %s: %d %s, want 403", key[:12], a.status, a.body)
		}
	}

	// A limited key reads the supervisors of its sessions alone.
	a = send(h, "GET", "/api/supervisors", "", nil, "X-API-Key", supLimitedKey)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"id":"guard"`) || strings.Contains(a.body, `"id":"ops"`) {
		t.Fatalf("limited list: %d %s, want guard only", a.status, a.body)
	}
	hidden := send(h, "GET", "/api/supervisors/ops", "", nil, "X-API-Key", supLimitedKey)
	unknown := send(h, "GET", "/api/supervisors/nope", "", nil, "X-API-Key", supLimitedKey)
	if hidden.status != http.StatusNotFound || hidden.p.Detail != strings.ReplaceAll(unknown.p.Detail, "nope", "ops") || hidden.p.Type != typeNotFound {
		t.Fatalf("limited get: hidden %d %s, unknown %s; want the same 404", hidden.status, hidden.body, unknown.body)
	}

	// Delete: a parent is refused naming its child; then both go.
	a = send(h, "DELETE", "/api/supervisors/ops", "", nil, admin...)
	if a.status != http.StatusConflict || !strings.Contains(a.p.Detail, `supervisor "ops" is the parent of supervisor "guard"`) {
		t.Fatalf("delete a parent: %d %s, want 409 naming guard", a.status, a.body)
	}
	for _, id := range []string{"guard", "ops"} {
		if a := send(h, "DELETE", "/api/supervisors/"+id, "", nil, admin...); a.status != http.StatusOK || a.body != `{"releasedHolds":[],"supervisorId":"`+id+`"}`+"\n" {
			t.Fatalf("delete %s: %d %s", id, a.status, a.body)
		}
	}
	if a := send(h, "DELETE", "/api/supervisors/ops", "", nil, admin...); a.status != http.StatusNotFound || a.p.Type != typeNotFound {
		t.Fatalf("delete again: %d %s, want 404", a.status, a.body)
	}
}

// TestSupervisorDocumentRefused: every problem of a document in one 400,
// each with its path; nothing is stored.
func TestSupervisorDocumentRefused(t *testing.T) {
	h, m := supervisorServer(t)
	body := `{"id":"other","name":"G","engine":{"type":"rules","settings":{"rules":[{"id":"r","when":{"event":"NodeStatusChanged","count":0,"withinSeconds":60},
		"then":{"command":"Explode"}}]}},"owns":["sessions:ci"],"parentId":"nobody","colour":1}`
	a := send(h, "PUT", "/api/supervisors/guard", jsonCT, []byte(body), "X-API-Key", supAdminKey)
	if a.status != http.StatusBadRequest || a.p.Type != typeInvalid || a.p.Title != "Invalid supervisor" {
		t.Fatalf("invalid document: %d %s", a.status, a.body)
	}
	want := []string{"id", "colour", "owns[0]", "engine.settings.rules[0].when.count", "engine.settings.rules[0].then.command"}
	for _, p := range want {
		if !slices.Contains(a.paths(), p) {
			t.Errorf("no violation at %s: %s", p, a.messages())
		}
	}
	checkWords(t, "invalid supervisor", a)
	// A document that parses but names a missing parent.
	a = send(h, "PUT", "/api/supervisors/guard", jsonCT, []byte(restGuard+`,"parentId":"nobody"}`), "X-API-Key", supAdminKey)
	if a.status != http.StatusBadRequest || !slices.Equal(a.paths(), []string{"parentId"}) {
		t.Fatalf("missing parent: %d %s", a.status, a.body)
	}
	for _, body := range []string{`{"name":"x","name":"y"}`, "{\"name\":\"\u0000\"}", `[]`, ``} {
		a := send(h, "PUT", "/api/supervisors/guard", jsonCT, []byte(body), "X-API-Key", supAdminKey)
		if a.status != http.StatusBadRequest || len(a.p.Errors) == 0 {
			t.Errorf("body %q: %d %s, want 400 with violations", body, a.status, a.body)
		}
	}
	if len(m.byID) != 0 || len(m.events) != 0 {
		t.Fatalf("refused documents stored %d supervisors, %d events", len(m.byID), len(m.events))
	}
}

func TestSupervisorEngineRoutes(t *testing.T) {
	h, _ := supervisorServer(t)
	viewer := []string{"X-API-Key", supViewerKey}
	a := send(h, "GET", "/api/supervisor-engines", "", nil, viewer...)
	var list struct {
		Engines []struct {
			Type, Category         string
			DefaultAllowedCommands []string
			Example                struct{ Type string }
			Settings               []struct{ Name string }
		}
	}
	decodeSup(t, a, &list)
	if a.status != http.StatusOK || len(list.Engines) != 4 || list.Engines[1].Type != "http" || list.Engines[1].Category != "EXTERNAL_SYSTEM" ||
		len(list.Engines[2].DefaultAllowedCommands) != 0 || list.Engines[3].Example.Type != "process" {
		t.Fatalf("engines: %d %s", a.status, a.body)
	}
	a = send(h, "GET", "/api/supervisor-engines/http", "", nil, viewer...)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"name":"secretHeaders"`) || !strings.Contains(a.body, `"default":"3000"`) {
		t.Fatalf("http engine: %d %s", a.status, a.body)
	}
	a = send(h, "GET", "/api/supervisor-engines/rules/usage", "", nil, viewer...)
	var usage struct {
		Type, Usage string
		Example     supDoc
		Conditions  []struct {
			Context, Where string
			Variables      []struct {
				Name   string
				Fields []struct{ Name string }
			}
		}
	}
	decodeSup(t, a, &usage)
	if a.status != http.StatusOK || !strings.Contains(usage.Usage, "## The rule document") || usage.Example.ID != "example-rules" ||
		len(usage.Example.AllowedCommands) != 21 || len(usage.Conditions) != 3 || usage.Conditions[0].Variables[0].Name != "event" ||
		len(usage.Conditions[0].Variables[0].Fields) == 0 {
		t.Fatalf("rules usage: %d %s", a.status, a.body)
	}
	a = send(h, "GET", "/api/supervisor-engines/rules/presets", "", nil, viewer...)
	if a.status != http.StatusOK || !strings.Contains(a.body, `"name":"stall-watchdog"`) || !strings.Contains(a.body, `"needs":`) ||
		!strings.Contains(a.body, `"settings":{"rules":[`) || !strings.Contains(a.body, `"maximum":10000`) {
		t.Fatalf("rules presets: %d %s", a.status, a.body)
	}
	a = send(h, "GET", "/api/supervisor-engines/http/presets", "", nil, viewer...)
	if a.status != http.StatusOK || a.body != "{\"presets\":[]}\n" {
		t.Fatalf("http presets: %d %q, want an empty list", a.status, a.body)
	}
	for _, p := range []string{"/api/supervisor-engines/cron", "/api/supervisor-engines/cron/usage", "/api/supervisor-engines/cron/presets"} {
		a := send(h, "GET", p, "", nil, viewer...)
		if a.status != http.StatusNotFound || !strings.Contains(a.p.Detail, `supervisor engine "cron" does not exist; the engines are rules, http, workflow, process`) {
			t.Errorf("GET %s: %d %s", p, a.status, a.body)
		}
	}
	// The catalogue is no session's: a limited key reads it.
	if a := send(h, "GET", "/api/supervisor-engines", "", nil, "X-API-Key", supLimitedKey); a.status != http.StatusOK {
		t.Errorf("limited catalogue: %d %s", a.status, a.body)
	}
}

// TestSupervisorRoutesOffWithoutAStore: a server without the store's use
// cases answers 404 on the store routes and still serves the catalogue.
func TestSupervisorRoutesOffWithoutAStore(t *testing.T) {
	srv, _, _ := strictServer(t, Config{})
	if a := send(srv.Handler(), "GET", "/api/supervisors", "", nil); a.status != http.StatusNotFound || !strings.Contains(a.p.Detail, "not enabled") {
		t.Errorf("list without a store: %d %s", a.status, a.body)
	}
	if a := send(srv.Handler(), "GET", "/api/supervisor-engines/rules", "", nil); a.status != http.StatusOK {
		t.Errorf("catalogue without a store: %d %s", a.status, a.body)
	}
}
