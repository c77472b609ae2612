package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/yukta/yukta/api/apiclient"
)

// TestHTTPRequestBodyAsDescribed: HTTP_REQUEST without a configured body
// sends the message payload on POST, PUT and PATCH and no body on GET, and
// the plugin's own description of body (GET /api/plugins/HTTP_REQUEST, the
// text users and agents read) says exactly that.
func TestHTTPRequestBodyAsDescribed(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.Method] = string(b)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, "YUKTA_EGRESS_ALLOWED_HOSTS="+strings.TrimPrefix(srv.URL, "http://"))

	st, b, _ := call(t, e.s, "GET", "/api/plugins/HTTP_REQUEST", "", nil)
	var d struct {
		Fields []struct{ Name, Description string } `json:"configFields"`
	}
	if st != 200 || json.Unmarshal(b, &d) != nil {
		t.Fatalf("GET /api/plugins/HTTP_REQUEST: %d %s", st, b)
	}
	desc := ""
	for _, f := range d.Fields {
		if f.Name == "body" {
			desc = f.Description
		}
	}
	for _, want := range []string{"POST, PUT and PATCH send the message payload", "other methods send no body"} {
		if !strings.Contains(desc, want) {
			t.Errorf("the body field's description %q lacks %q", desc, want)
		}
	}

	for _, method := range []string{"POST", "GET"} {
		wid := strings.ToLower(method)
		e.apply("body-"+wid, wf(wid, []string{nd("start", "MANUAL", ""),
			nd("call", "HTTP_REQUEST", `{"url":"`+srv.URL+`/x","method":"`+method+`"}`)}, []string{ed("start", "call", "")}))
		id := e.start("body-"+wid, wid, map[string]any{"order": 7})
		e.waitStatus("body-"+wid, id, apiclient.ExecutionStatusSUCCESS)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["POST"] != `{"order":7}` {
		t.Errorf("POST without body sent %q, want the payload {\"order\":7}", got["POST"])
	}
	if body, ok := got["GET"]; !ok || body != "" {
		t.Errorf("GET without body: called %v, sent %q, want called with no body", ok, body)
	}
}
