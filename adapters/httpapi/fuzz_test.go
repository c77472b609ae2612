package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// bodyRoutes are the operations that take a JSON body, by method and path.
var bodyRoutes = []struct{ method, target string }{
	{"POST", "/api/sessions/s1/workflows/w/executions"},
	{"POST", inputP},
	{"POST", execP + "/control"},
	{"POST", execP + "/nodes/n1/control"},
	{"PUT", execP + "/nodes/n1/breakpoint"},
	{"POST", "/api/sessions/s1/workflows/w/stop"},
	{"POST", "/api/hooks/s1/w"},
	{"PUT", "/api/sessions/s1"},
	{"POST", "/api/keys"},
	{"PATCH", "/api/keys/ci"},
	{"POST", "/api/worker/v1/poll"},
	{"POST", "/api/worker/v1/tasks/7/heartbeat"},
	{"POST", "/api/worker/v1/tasks/7/complete"},
	{"POST", "/api/worker/v1/tasks/7/fail"},
	{"POST", "/api/worker/v1/tasks/7/logs"},
}

// FuzzRESTBody sends any bytes as the JSON body of every operation that
// takes one, through the real middleware, validator, binder, handlers and
// error table (use cases are fakes that accept everything). No body may
// cause a 5xx, every refusal is a problem of a type of ours with plain words,
// and a 400 lists at least one violation. Run longer with:
// go test ./adapters/httpapi -run '^$' -fuzz FuzzRESTBody -fuzztime 5m -fuzzminimizetime 5s
func FuzzRESTBody(f *testing.F) {
	for i := range bodyRoutes {
		for _, seed := range []string{
			`{}`, ``, ` `, `null`, `[]`, `"x"`, `1`, `{"payload":1}`, `{"answer":true}`, `{"action":"PAUSE"}`,
			`{"field":"a","equals":9007199254740993}`, `{"payload":{"id":9223372036854775809}}`,
			`{"payload":"\u0000"}`, "{\"payload\":\"\x00\"}", "{\"payload\":\"\xff\"}", `{"payload":"\ud800"}`,
			`{"payload":1,"payload":2}`, `{"payload":1e400}`, `{"payload":-1e400}`, `{"payload":1e-400}`,
			`{"reason":"\u0000","action":"STOP"}`, `{"key":"\u0000","action":"PAUSE"}`, `{"answer":{"a":1,"a":1}}`,
			`{"payload":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
			`{"name":"n","workflows":[{"workflowId":"w","nodes":[{"nodeId":"t","type":"MANUAL"},{"nodeId":"l","type":"LOG","config":{"message":"\u0000"}}]}]}`,
			`{"action":"PAUSE","wait":1e400}`, `{"action":"PAUSE","wait":"1"}`, `{"action":"PAUSE"} {}`, `{"action":"PAUSE"`,
			`{"name":"ci","role":"ADMIN","sessions":["a"],"ttl":"1h"}`, `{"name":"ci","role":"x","expiresAt":"2001-01-01T00:00:00Z"}`,
			`{"name":"\u0000","role":"ADMIN"}`, `{"name":"ci","role":"ADMIN","sessions":[]}`, `{"name":"ci","role":"ADMIN","ttl":1}`,
			`{"ttl":"1h"}`, `{"expiresAt":"2099-01-01T00:00:00Z","ttl":"1h"}`, `{"expiresAt":1}`,
			`{"queues":["a","b"],"wait":5,"max":10}`, `{"queues":["a"],"wait":-1}`, `{"leaseToken":"1","output":{"x":[1,2]},"port":"default"}`,
			`{"leaseToken":"1","output":1,"usage":{"input":1,"output":1,"tokensKnown":false,"cacheRead":0}}`,
			`{"leaseToken":"1","error":"e","retryable":false}`, `{"leaseToken":"1","lines":[{"level":"warn","message":"m"}]}`,
			"\ufeff{}", `{"a":"\uDBFF\uDFFF"}`, `{"payload":01}`, `{"payload":-}`, `{"payload":1.}`, `{"payload":tru}`,
		} {
			f.Add(byte(i), []byte(seed))
		}
	}
	srv, _, logs := strictServer(f, Config{BodyLimit: 1 << 16})
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, route byte, body []byte) {
		r := bodyRoutes[int(route)%len(bodyRoutes)]
		a := send(h, r.method, r.target, jsonCT, body)
		if a.status >= 500 {
			t.Fatalf("%s %s with body %q: %d %s", r.method, r.target, body, a.status, a.body)
		}
		if a.status >= 400 {
			checkWords(t, r.method+" "+r.target, a)
			if t.Failed() {
				t.Fatalf("body %q", body)
			}
		}
		if a.status == http.StatusBadRequest && len(a.p.Errors) == 0 {
			t.Fatalf("%s %s with body %q: 400 without violations: %s", r.method, r.target, body, a.body)
		}
		if n := logs.FilterMessage("request failed").Len(); n != 0 {
			t.Fatalf("body %q: %d requests failed with a 5xx", body, n)
		}
	})
}
