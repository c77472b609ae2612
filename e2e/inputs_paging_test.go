package e2e

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
)

// TestInputsComeInPages: inputs pile up without bound, so GET /api/inputs
// and MCP list_inputs page them, oldest first, by a cursor: every input
// once, in order, across pages of 2; answering one meanwhile does not shift
// the pages after it; a cursor the server did not issue is 400.
func TestInputsComeInPages(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t)})
	if st, b, _ := call(t, s, "PUT", "/api/sessions/asks", "", []byte(`{"name":"asks","workflows":[{"workflowId":"ask","nodes":[
		{"nodeId":"in","type":"MANUAL"},{"nodeId":"ask","type":"INPUT_REQUEST","config":{"prompt":"Ship it?"}},{"nodeId":"out","type":"RESULT"}],
		"edges":[{"source":"in","target":"ask"},{"source":"ask","target":"out","sourcePort":"approved"}]}]}`)); st != 201 {
		t.Fatalf("apply: %d %s", st, b)
	}
	const runs = 5
	for range runs {
		if st, b, _ := call(t, s, "POST", "/api/sessions/asks/workflows/ask/executions", "", []byte(`{}`)); st != 201 {
			t.Fatalf("start: %d %s", st, b)
		}
	}
	type page struct {
		Inputs []struct {
			InputId   string
			CreatedAt time.Time
		}
		NextCursor string
	}
	get := func(q string) page {
		t.Helper()
		st, b, _ := call(t, s, "GET", "/api/inputs?sessionId=asks&limit=2"+q, "", nil)
		var p page
		if st != 200 || json.Unmarshal(b, &p) != nil {
			t.Fatalf("GET /api/inputs%s: %d %s", q, st, b)
		}
		return p
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, b, _ := call(t, s, "GET", "/api/inputs?sessionId=asks", "", nil)
		if st == 200 && strings.Count(string(b), `"inputId"`) == runs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d inputs after 30 s, want %d: %s", strings.Count(string(b), `"inputId"`), runs, b)
		}
	}
	var ids []string
	cursor := ""
	pages := 0
	for {
		p := get("&cursor=" + url.QueryEscape(cursor))
		pages++
		for _, in := range p.Inputs {
			ids = append(ids, in.InputId)
		}
		if len(p.Inputs) > 2 || pages > runs {
			t.Fatalf("page %d has %d inputs (limit 2)", pages, len(p.Inputs))
		}
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("input %s on two pages: %v", id, ids)
		}
		seen[id] = true
	}
	if len(ids) != runs || pages != 3 {
		t.Fatalf("%d inputs over %d pages, want %d over 3: %v", len(ids), pages, runs, ids)
	}

	// Answering the first input leaves the second page where it was.
	first := get("")
	second := get("&cursor=" + url.QueryEscape(first.NextCursor))
	if st, b, _ := call(t, s, "POST", "/api/inputs/"+first.Inputs[0].InputId, "", []byte(`{"answer":{"approved":true}}`)); st != 200 {
		t.Fatalf("answer: %d %s", st, b)
	}
	again := get("&cursor=" + url.QueryEscape(first.NextCursor))
	if len(again.Inputs) != 2 || again.Inputs[0].InputId != second.Inputs[0].InputId || again.Inputs[1].InputId != second.Inputs[1].InputId {
		t.Fatalf("the second page moved after an answer on the first: %v, then %v", second.Inputs, again.Inputs)
	}

	for _, bad := range []string{"nope", "bm90IGEgY3Vyc29y"} {
		st, b, _ := call(t, s, "GET", "/api/inputs?sessionId=asks&cursor="+bad, "", nil)
		if st != 400 || !strings.Contains(string(b), "cursor") {
			t.Errorf("cursor %q: %d %s, want 400 naming the cursor", bad, st, b)
		}
	}
	if st, b, _ := call(t, s, "GET", "/api/inputs?limit=501", "", nil); st != 400 || !strings.Contains(string(b), "query.limit") {
		t.Errorf("limit 501: %d %s, want 400 naming query.limit", st, b)
	}

	// MCP list_inputs pages the same way.
	cs := mustConnect(t, s.URL, "")
	var mp struct {
		Inputs     []struct{ InputId string }
		NextCursor string
	}
	mustCall(t, cs, "list_inputs", map[string]any{"sessionId": "asks", "limit": 3}, &mp)
	if len(mp.Inputs) != 3 || mp.NextCursor == "" {
		t.Fatalf("list_inputs limit 3: %d inputs, next %q", len(mp.Inputs), mp.NextCursor)
	}
	next := mp.NextCursor
	mp.Inputs, mp.NextCursor = nil, ""
	mustCall(t, cs, "list_inputs", map[string]any{"sessionId": "asks", "limit": 3, "cursor": next}, &mp)
	if len(mp.Inputs) != 1 || mp.NextCursor != "" || mp.Inputs[0].InputId != ids[4] {
		t.Fatalf("list_inputs second page: %+v, want the last open input %s alone", mp, ids[4])
	}
}
