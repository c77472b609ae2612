package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

const jsonType = "application/json"

func session(id string, workflows ...string) []byte {
	var wfs []string
	for _, w := range workflows {
		wfs = append(wfs, fmt.Sprintf(`{"workflowId":%q,"description":"wf %s","nodes":[
			{"nodeId":"start","type":"MANUAL"},
			{"nodeId":"call","type":"HTTP_REQUEST","config":{"url":"https://example.com/hook","authorization":"Bearer canary-7f3a"}},
			{"nodeId":"out","type":"RESULT"}],
			"edges":[{"source":"start","target":"call"},{"source":"call","target":"out"}]}`, w, w))
	}
	return fmt.Appendf(nil, `{"name":"Session %s","description":"e2e","initiator":"e2e","workflows":[%s]}`, id, strings.Join(wfs, ","))
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	ctx := context.Background()
	c := s.Client

	put, err := c.PutSessionWithBodyWithResponse(ctx, "orders", nil, jsonType, bytes.NewReader(session("orders", "intake", "billing")))
	if err != nil {
		t.Fatal(err)
	}
	if put.StatusCode() != http.StatusCreated || put.JSON201 == nil || !slices.Equal(put.JSON201.Workflows, []string{"intake", "billing"}) {
		t.Fatalf("create: %d %s, want 201 listing intake,billing", put.StatusCode(), put.Body)
	}

	got, err := c.GetSessionWithResponse(ctx, "orders")
	if err != nil || got.JSON200 == nil {
		t.Fatalf("get: %v %s", err, got.Body)
	}
	if deref(got.JSON200.SessionId) != "orders" || got.JSON200.Name != "Session orders" || len(got.JSON200.Workflows) != 2 {
		t.Fatalf("get = %+v", got.JSON200)
	}
	if cfg := deref(got.JSON200.Workflows[0].Nodes[1].Config); cfg["authorization"] != "***" || cfg["url"] != "https://example.com/hook" {
		t.Fatalf("secret config field read back as %v, want *** (url kept)", cfg)
	}
	if strings.Contains(string(got.Body), "canary-7f3a") {
		t.Fatal("a secret leaked in the session read")
	}

	// Replace: billing is dropped. Sending the read document back keeps the masked secret.
	doc := *got.JSON200
	doc.Workflows = doc.Workflows[:1]
	body, _ := json.Marshal(doc)
	put, err = c.PutSessionWithBodyWithResponse(ctx, "orders", nil, jsonType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if put.StatusCode() != http.StatusOK || put.JSON200 == nil || !slices.Equal(put.JSON200.RemovedWorkflows, []string{"billing"}) {
		t.Fatalf("replace: %d %s, want 200 removing billing", put.StatusCode(), put.Body)
	}
	wf, err := c.GetWorkflowWithResponse(ctx, "orders", "billing")
	if err != nil || wf.StatusCode() != http.StatusNotFound || !strings.Contains(string(wf.Body), "get_session_details") {
		t.Fatalf("removed workflow: %d %s, want 404 naming the next call", wf.StatusCode(), wf.Body)
	}
	wf, err = c.GetWorkflowWithResponse(ctx, "orders", "intake")
	if err != nil || wf.JSON200 == nil || len(wf.JSON200.Nodes) != 3 || deref(wf.JSON200.Edges[0].SourcePort) != "default" {
		t.Fatalf("workflow: %v %s", err, wf.Body)
	}

	list, err := c.ListSessionsWithResponse(ctx, &apiclient.ListSessionsParams{})
	if err != nil || list.JSON200 == nil || len(list.JSON200.Sessions) != 1 || list.JSON200.Sessions[0].WorkflowCount != 1 {
		t.Fatalf("list: %v %s", err, list.Body)
	}

	del, err := c.DeleteSessionWithResponse(ctx, "orders", nil)
	if err != nil || del.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v %d", err, del.StatusCode())
	}
	got, err = c.GetSessionWithResponse(ctx, "orders")
	if err != nil || got.StatusCode() != http.StatusNotFound || got.ApplicationproblemJSON404 == nil ||
		!strings.Contains(deref(got.ApplicationproblemJSON404.Detail), "GET /api/sessions") {
		t.Fatalf("get after delete: %d %s, want 404 naming the list call", got.StatusCode(), got.Body)
	}
}

func TestInvalidSessionListsEveryErrorAndStoresNothing(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	ctx := context.Background()
	bad := []byte(`{"name":"Broken","colour":"red","workflows":[{"workflowId":"w","nodes":[
		{"nodeId":"start","type":"MANUAL"},
		{"nodeId":"a","type":"LOG"},
		{"nodeId":"b","type":"LOG"},
		{"nodeId":"out","type":"RESULT"}],
		"edges":[
		{"source":"start","target":"a"},
		{"source":"a","target":"b"},
		{"source":"b","target":"a"},
		{"source":"a","target":"ghost"},
		{"source":"start","target":"out","sourcePort":"approved"}]}]}`)
	res, err := s.Client.PutSessionWithBodyWithResponse(ctx, "broken", nil, jsonType, bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != http.StatusBadRequest || res.ApplicationproblemJSON400 == nil {
		t.Fatalf("got %d %s, want 400 problem", res.StatusCode(), res.Body)
	}
	if ct := res.HTTPResponse.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, want application/problem+json", ct)
	}
	want := map[string]string{ // path -> a word the message must contain
		"colour":                           "unknown field",
		"workflows[0].edges":               "cycle",
		"workflows[0].edges[3].target":     "ghost",
		"workflows[0].edges[4].sourcePort": "approved",
	}
	errs := deref(res.ApplicationproblemJSON400.Errors)
	for path, word := range want {
		if !slices.ContainsFunc(errs, func(v apiclient.Violation) bool { return v.Path == path && strings.Contains(v.Message, word) }) {
			t.Errorf("no violation at %s mentioning %q in %+v", path, word, errs)
		}
	}
	got, _ := s.Client.GetSessionWithResponse(ctx, "broken")
	if got.StatusCode() != http.StatusNotFound {
		t.Fatalf("refused session was stored: %d", got.StatusCode())
	}
}

func TestDataSurvivesKill(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	s := startServer(t, serverOptions{DSN: dsn})
	res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), "durable", nil, jsonType, bytes.NewReader(session("durable", "w")))
	if err != nil || res.StatusCode() != http.StatusCreated {
		t.Fatalf("apply: %v %s", err, res.Body)
	}
	s.Kill() // kill -9: the apply was acknowledged, so it must be there
	s2 := startServer(t, serverOptions{DSN: dsn})
	got, err := s2.Client.GetSessionWithResponse(context.Background(), "durable")
	if err != nil || got.JSON200 == nil || got.JSON200.Workflows[0].WorkflowId != "w" {
		t.Fatalf("after kill -9 and restart: %v %s", err, got.Body)
	}
}

func TestExamplesApply(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	files, _ := filepath.Glob("../examples/*.json")
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var head struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(b, &head)
		res, err := s.Client.PutSessionWithBodyWithResponse(context.Background(), head.SessionID, nil, jsonType, bytes.NewReader(b))
		if err != nil || res.StatusCode() != http.StatusCreated || res.JSON201 == nil || len(res.JSON201.Warnings) != 0 {
			t.Errorf("%s: %v %s, want 201 with no warnings", f, err, res.Body)
		}
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
