package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// BenchmarkMCPStatus measures get_workflow_status over MCP (tools/call on
// stateless streamable HTTP, JSON responses) at 1 and 50 concurrent clients,
// and the same read over REST (GET .../executions/{id}) on the same server,
// so the ratio shows what the MCP layer costs. A client is what a stateless
// agent is: one JSON-RPC POST per call (no initialize needed in stateless
// mode), over kept-alive connections; REST uses the same HTTP client. YUKTA_BENCH_GOGC,
// when set, is passed to the server as GOGC. Run:
//
//	go test ./e2e -run '^$' -bench MCPStatus -benchtime 1x -v
func BenchmarkMCPStatus(b *testing.B) {
	env := durableCluster(b)
	for range b.N {
		o := serverOptions{DSN: env.dsn, Args: []string{"--log-level", "warn"},
			Env: []string{"YUKTA_RATE_LIMIT_SOURCE=off", "YUKTA_RATE_LIMIT_KEY=off"}}
		if g := os.Getenv("YUKTA_BENCH_GOGC"); g != "" {
			o.Env = append(o.Env, "GOGC="+g)
		}
		s := startServer(b, o)
		applyDoc(b, s, "bench", linearSession("bench", 10))
		id := startRun(b, s, "bench", map[string]any{"i": 1})
		waitDone(b, s, "bench", id)
		tr := &http.Transport{MaxIdleConns: 200, MaxIdleConnsPerHost: 200, IdleConnTimeout: time.Minute}
		hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		rest, err := apiclient.NewClientWithResponses(s.URL, apiclient.WithHTTPClient(hc))
		if err != nil {
			b.Fatal(err)
		}
		for _, clients := range []int{1, 50} {
			calls := 2000 / clients
			if clients == 1 {
				calls = 1000
			}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_workflow_status","arguments":{"sessionId":"bench","executionId":"` + id + `"}}}`
			mcpLat := measure(b, clients, calls, func(*testing.B) func() error {
				return func() error { return rawCall(hc, s.URL+"/mcp", body) }
			})
			restLat := measure(b, clients, calls, func(*testing.B) func() error {
				return func() error {
					res, err := rest.GetExecutionWithResponse(context.Background(), "bench", id)
					if err == nil && res.JSON200 == nil {
						err = fmt.Errorf("REST status %d", res.StatusCode())
					}
					return err
				}
			})
			mp50, mp99 := percentile(mcpLat, 0.5), percentile(mcpLat, 0.99)
			rp50, rp99 := percentile(restLat, 0.5), percentile(restLat, 0.99)
			b.ReportMetric(ms(mp50), fmt.Sprintf("mcp_p50_ms/c%d", clients))
			b.ReportMetric(ms(mp99), fmt.Sprintf("mcp_p99_ms/c%d", clients))
			b.ReportMetric(ms(rp50), fmt.Sprintf("rest_p50_ms/c%d", clients))
			b.ReportMetric(ms(rp99), fmt.Sprintf("rest_p99_ms/c%d", clients))
			b.ReportMetric(ms(mp50)/ms(rp50), fmt.Sprintf("p50_ratio/c%d", clients))
			b.ReportMetric(ms(mp99)/ms(rp99), fmt.Sprintf("p99_ratio/c%d", clients))
		}
		tr.CloseIdleConnections()
		_ = s.Stop()
	}
}

// rawCall posts one JSON-RPC body and checks the tool answered.
func rawCall(hc *http.Client, url, body string) error {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"structuredContent"`)) {
		return fmt.Errorf("MCP answer %d: %.300s", res.StatusCode, out)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measure runs calls calls on each of clients goroutines (after a short
// warm-up) and returns every call's latency.
func measure(b *testing.B, clients, calls int, client func(*testing.B) func() error) []time.Duration {
	b.Helper()
	fns := make([]func() error, clients)
	for i := range fns {
		fns[i] = client(b)
		for range 5 { // warm up connections and caches
			if err := fns[i](); err != nil {
				b.Fatal(err)
			}
		}
	}
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for range calls {
				t0 := time.Now()
				if err := fns[i](); err != nil {
					errs[i] = err
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	var all []time.Duration
	for i := range clients {
		if errs[i] != nil {
			b.Fatal(errs[i])
		}
		all = append(all, lat[i]...)
	}
	return all
}

// waitDone polls REST until the execution has ended.
func waitDone(b *testing.B, s *server, sid, id string) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		res, err := s.Client.GetExecutionWithResponse(context.Background(), sid, id)
		if err == nil && res.JSON200 != nil {
			if st, _ := json.Marshal(res.JSON200.Status); string(st) == `"SUCCESS"` {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("execution %s did not succeed", id)
}
