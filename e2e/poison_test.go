package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres/pgtest"
	"github.com/yukta/yukta/api/apiclient"
)

// upstream answers HTTP_REQUEST nodes with bodies PostgreSQL cannot store
// and counts the calls of each Idempotency-Key.
type upstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	keys map[string]int
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{keys: map[string]int{}}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.keys[r.URL.Path+" "+r.Header.Get("Idempotency-Key")]++
		u.mu.Unlock()
		switch r.URL.Path {
		case "/nul-escape":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"x":"a\u0000b"}`))
		case "/nul-raw":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("a\x00b"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// rssBytes reads the resident set size of a process.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestPoisonedRunsDoNotHoldBackOthers (issue 10): runs whose nodes produce
// values PostgreSQL cannot store (U+0000 from an expression, from a JSON
// answer and from a raw text answer; an expression value of 100 MB) are
// mixed with 200 clean runs. Each poisoned run fails with its reason, each
// upstream is called exactly once, the clean runs finish as fast as without
// them, and the server's memory stays near idle.
func TestPoisonedRunsDoNotHoldBackOthers(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	s := startServer(t, serverOptions{DSN: pgtest.NewDatabase(t), Env: []string{
		"YUKTA_EGRESS_ALLOWED_HOSTS=" + strings.TrimPrefix(up.srv.URL, "http://"),
	}})
	e := &env{t: t, s: s, c: s.Client, ctx: context.Background()}
	e.apply("poison",
		line("clean", nd("start", "MANUAL", ""), nd("a", "TRANSFORM", `{"expression":"{\"n\": payload.n + 1}"}`),
			nd("b", "LOG", `{"message":"a clean run"}`), nd("c", "TRANSFORM", `{"expression":"{\"n\": payload.n * 2}"}`), nd("out", "RESULT", "")),
		line("tnul", nd("start", "MANUAL", ""), nd("bad", "TRANSFORM", `{"expression":"{\"x\": \"a\\u0000b\"}"}`), nd("out", "RESULT", "")),
		line("hnul", nd("start", "MANUAL", ""), nd("bad", "HTTP_REQUEST", fmt.Sprintf(`{"url":"%s/nul-escape","retry":{"maxAttempts":3,"backoff":"10ms"}}`, up.srv.URL)), nd("out", "RESULT", "")),
		line("hraw", nd("start", "MANUAL", ""), nd("bad", "HTTP_REQUEST", fmt.Sprintf(`{"url":"%s/nul-raw","retry":{"maxAttempts":3,"backoff":"10ms"}}`, up.srv.URL)), nd("out", "RESULT", "")),
		line("huge", nd("start", "MANUAL", ""), nd("bad", "TRANSFORM", `{"expression":"{\"l\": payload.l.map(a, payload.s)}"}`), nd("out", "RESULT", "")),
	)

	startClean := func(n int) []string {
		ids := make([]string, n)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := range n {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				ids[i] = e.start("poison", "clean", map[string]any{"n": i})
			})
		}
		wg.Wait()
		return ids
	}
	waitClean := func(ids []string) time.Duration {
		began := time.Now()
		for i, id := range ids {
			x := e.waitStatusWithin("poison", id, apiclient.ExecutionStatusSUCCESS, time.Minute)
			want := fmt.Sprintf(`{"n":%d}`, (i+1)*2)
			if b, _ := json.Marshal(x.Result); string(b) != want {
				t.Errorf("clean run %d: result %s, want %s", i, b, want)
			}
		}
		return time.Since(began)
	}

	// The baseline: 200 clean runs alone.
	began := time.Now()
	waitClean(startClean(200))
	alone := time.Since(began)

	idle := rssBytes(t, s.cmd.Process.Pid)
	// The same load with 10 poisoned runs among it.
	big := map[string]any{"l": make([]any, 200), "s": strings.Repeat("x", 500_000)}
	poisoned := map[string]string{}
	began = time.Now()
	var clean []string
	var wg sync.WaitGroup
	wg.Go(func() { clean = startClean(200) })
	for i := range 10 {
		wf := []string{"tnul", "tnul", "hnul", "hnul", "hnul", "hraw", "hraw", "hraw", "huge", "huge"}[i]
		var payload any = map[string]any{}
		if wf == "huge" {
			payload = big
		}
		poisoned[e.start("poison", wf, payload)] = wf
	}
	wg.Wait()
	waitClean(clean)
	mixed := time.Since(began)
	t.Logf("200 clean runs: %s alone, %s with 10 poisoned runs among them", alone.Round(time.Millisecond), mixed.Round(time.Millisecond))
	// Before batch isolation the clean runs sharing a batch with a poisoned
	// one waited for lease expiry (15 s) over and over; this bound only
	// catches that, not noise.
	if mixed > 2*alone+10*time.Second {
		t.Errorf("the clean runs took %s with poisoned runs among them, %s without", mixed, alone)
	}

	reasons := map[string]string{
		"tnul": `node bad failed: CEL expression "{\"x\": \"a\\u0000b\"}": value.x: contains U+0000 (NUL), which PostgreSQL cannot store`,
		"hnul": "node bad failed: message.body.x: contains U+0000 (NUL), which PostgreSQL cannot store",
		"hraw": "node bad failed: message.body: contains U+0000 (NUL), which PostgreSQL cannot store",
		"huge": "value: the expression's value is larger than the limit of 1 MiB; raise YUKTA_MAX_MESSAGE_BYTES",
	}
	for id, wf := range poisoned {
		x := e.waitStatusWithin("poison", id, apiclient.ExecutionStatusFAILURE, time.Minute)
		if got := deref(x.Error); !strings.Contains(got, reasons[wf]) {
			t.Errorf("%s run %s failed with %q, want %q", wf, id, got, reasons[wf])
		}
		if n := nodeOf(t, x, "bad"); n.Status != apiclient.NodeStatusFAILURE {
			t.Errorf("%s run: node bad is %s, want FAILURE", wf, n.Status)
		}
		// The execution reads back small: nothing over the limit was stored.
		res, err := e.c.GetExecutionWithResponse(e.ctx, "poison", id)
		if err != nil || len(res.Body) > 64<<10 {
			t.Errorf("%s run: GET execution is %d bytes (%v)", wf, len(res.Body), err)
		}
	}
	// Each upstream was called exactly once per message: a value error is
	// not retried (the node's retry policy is for faults that may pass) and
	// no batch was run again.
	up.mu.Lock()
	calls := map[string]int{}
	for key, n := range up.keys {
		if n != 1 {
			t.Errorf("upstream %s called %d times, want 1", key, n)
		}
		calls[strings.Fields(key)[0]]++
	}
	up.mu.Unlock()
	if calls["/nul-escape"] != 3 || calls["/nul-raw"] != 3 {
		t.Errorf("upstream keys %v, want 3 for each path", calls)
	}
	// Memory after the 100 MB attempts stays near where it was.
	if after := rssBytes(t, s.cmd.Process.Pid); after > idle+64<<20 {
		t.Errorf("server RSS went from %d MB to %d MB", idle>>20, after>>20)
	} else {
		t.Logf("server RSS %d MB before, %d MB after the poisoned runs", idle>>20, after>>20)
	}
	if strings.Contains(s.logs.String(), "SQLSTATE 22") || strings.Contains(s.logs.String(), "data exception 22") {
		t.Errorf("a poisoned value reached PostgreSQL; the checks before the commit should have stopped it")
	}
}

// waitStatusWithin polls a run until it ends, and fails unless it ended
// with want.
func (e *env) waitStatusWithin(sid, eid string, want apiclient.ExecutionStatus, d time.Duration) apiclient.Execution {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		x := e.get(sid, eid)
		if x.EndedAt != nil {
			if x.Status != want {
				e.t.Fatalf("execution %s ended %s (%s), want %s", eid, x.Status, deref(x.Error), want)
			}
			return x
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("execution %s did not end within %s; last state:\n%s", eid, d, describe(x))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
