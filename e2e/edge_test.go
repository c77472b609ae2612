package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api"
	"github.com/yukta/yukta/api/apiclient"
)

func TestRequestsRefusedAtTheEdge(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	big := append([]byte(`{"name":"x","description":"`), bytes.Repeat([]byte("a"), 1<<20)...)
	big = append(big, `"}`...)
	cases := []struct {
		name, method, path, ctype string
		body                      []byte
		header                    []string
		status                    int
		detail                    string
	}{
		{"wrong content type", "PUT", "/api/sessions/a", "text/plain", []byte("x"), nil, 415, "application/json"},
		{"body over 1 MiB", "PUT", "/api/sessions/a", jsonType, big, nil, 413, ""},
		{"malformed JSON", "PUT", "/api/sessions/a", jsonType, []byte(`{"name":`), nil, 400, "not valid JSON"},
		{"data after the document", "PUT", "/api/sessions/a", jsonType, []byte(`{"name":"x","workflows":[]} {}`), nil, 400, "after the JSON object"},
		{"bad session id in path", "GET", "/api/sessions/NOT_OK", "", nil, nil, 400, "sessionId"},
		{"limit out of range", "GET", "/api/sessions?limit=501", "", nil, nil, 400, "limit"},
		{"bad cursor", "GET", "/api/sessions?cursor=zz", "", nil, nil, 400, "cursor"},
		{"unknown route", "GET", "/api/nothing", "", nil, nil, 404, "openapi.yaml"},
		{"wrong method", "POST", "/api/sessions", jsonType, []byte(`{}`), nil, 405, ""},
		{"unknown plugin", "GET", "/api/plugins/NOPE", "", nil, nil, 404, "GET /api/plugins"},
		{"plugin config not JSON", "GET", "/api/plugins/ROUTER?config=" + url.QueryEscape("[1]"), "", nil, nil, 400, "query.config"},
		{"invalid plugin config", "GET", "/api/plugins/DELAY?config=" + url.QueryEscape(`{"duration":5}`), "", nil, nil, 400, "config.duration"},
		{"foreign Host", "GET", "/api/sessions", "", nil, []string{"Host", "attacker.example"}, 403, "Host"},
		{"cross-site Origin", "GET", "/api/sessions", "", nil, []string{"Origin", "https://attacker.example"}, 403, "cross-origin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, body := s.do(t, c.method, c.path, c.ctype, c.body, c.header...)
			if res.StatusCode != c.status {
				t.Fatalf("status %d (%s), want %d", res.StatusCode, body, c.status)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("content type %q, want application/problem+json", ct)
			}
			if !strings.Contains(string(body), c.detail) {
				t.Fatalf("problem %s does not mention %q", body, c.detail)
			}
		})
	}
	// Nothing above may have created anything.
	list, err := s.Client.ListSessionsWithResponse(context.Background(), nil)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Sessions) != 0 {
		t.Fatalf("refused requests left sessions behind: %v %s", err, list.Body)
	}
}

func TestPluginCatalogue(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	ctx := context.Background()
	list, err := s.Client.ListPluginsWithResponse(ctx)
	if err != nil || list.JSON200 == nil {
		t.Fatal(err)
	}
	var types []string
	for _, p := range list.JSON200.Plugins {
		types = append(types, p.Type)
	}
	for _, want := range []string{"MANUAL", "WEBHOOK", "SCHEDULE", "SUPERVISOR_SIGNAL", "HTTP_REQUEST", "TRANSFORM", "FILTER",
		"ROUTER", "SPLIT", "DELAY", "INPUT_REQUEST", "LOG", "FAIL", "RESULT", "WEBHOOK_OUT", "SUPERVISOR_DECISION"} {
		if !slices.Contains(types, want) {
			t.Errorf("catalogue lacks %s: %v", want, types)
		}
	}
	if list.JSON200.Plugins[0].Category != "trigger" {
		t.Errorf("triggers should come first, got %v", list.JSON200.Plugins[0])
	}
	cfg, _ := json.Marshal(map[string]any{"routes": []map[string]string{{"port": "big", "condition": "payload.amount > 100"}, {"port": "small", "condition": "true"}}, "fallback": false})
	cfgStr := string(cfg)
	d, err := s.Client.GetPluginWithResponse(ctx, "ROUTER", &apiclient.GetPluginParams{Config: &cfgStr})
	if err != nil || d.JSON200 == nil {
		t.Fatalf("%v %s", err, d.Body)
	}
	if !slices.Equal(d.JSON200.Ports, []string{"big", "small"}) {
		t.Fatalf("ROUTER ports for its config = %v, want [big small]", d.JSON200.Ports)
	}
	h, err := s.Client.GetPluginWithResponse(ctx, "HTTP_REQUEST", nil)
	if err != nil || h.JSON200 == nil {
		t.Fatal(err)
	}
	secret := false
	for _, f := range h.JSON200.ConfigFields {
		if f.Name == "authorization" {
			secret = f.Secret
		}
	}
	if !secret || h.JSON200.Usage == "" {
		t.Fatalf("HTTP_REQUEST details lack a secret authorization field or usage: %s", h.Body)
	}
}

func TestSpecIsServed(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	res, body := s.do(t, "GET", "/api/openapi.yaml", "", nil)
	if res.StatusCode != http.StatusOK || !bytes.Equal(body, api.Spec) || res.Header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("GET /api/openapi.yaml: %d %q, want the embedded spec", res.StatusCode, res.Header.Get("Content-Type"))
	}
	res, body = s.do(t, "GET", "/healthz", "", nil)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("healthz: %d %s", res.StatusCode, body)
	}
}
