package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

// agentHTTP sends one request with a bearer token and decodes a JSON answer
// into out (when not nil); it returns the status.
func agentHTTP(b *testing.B, method, url, token string, body []byte, out any) int {
	b.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			b.Fatalf("%s %s: %v in %s", method, url, err, raw)
		}
	}
	if res.StatusCode >= 300 {
		b.Logf("%s %s: %d %.300s", method, url, res.StatusCode, raw)
	}
	return res.StatusCode
}

// BenchmarkAgentAPI measures the agent API on the durable cluster:
// directive → effect latency (a PauseWorkflow sent by an agent until the
// 202 that says it applied, checked on the run) at 1 and 8 agents, and the
// signals per second one long-poll consumer reads through a backlog of
// events, beside pgbench single-row insert commits at the same client
// counts.
func BenchmarkAgentAPI(b *testing.B) {
	env := durableCluster(b)
	for range b.N {
		s := benchServer(b, env)
		applyDoc(b, s, "nap", []byte(`{"name":"nap","workflows":[{"workflowId":"w","nodes":[{"nodeId":"in","type":"MANUAL"},
			{"nodeId":"nap","type":"DELAY","config":{"duration":"600s"}}],"edges":[{"source":"in","target":"nap"}]}]}`))
		applyDoc(b, s, "chain", linearSession("chain", 10))
		if st := agentHTTP(b, "PUT", s.URL+"/api/supervisors/agent", "", []byte(`{"name":"Agent","owns":["session:nap","session:chain"],
			"engine":{"type":"http","settings":{}}}`), nil); st != 201 {
			b.Fatalf("supervisor: %d", st)
		}
		var cred struct{ Token string }
		if st := agentHTTP(b, "POST", s.URL+"/api/supervisors/agent/credential", "", nil, &cred); st != 201 {
			b.Fatalf("credential: %d", st)
		}
		base := s.URL + "/api/agent/v1"

		// Directive -> effect.
		for _, agents := range []int{1, 8} {
			const perAgent = 40
			runs := make([]string, agents*perAgent)
			for i := range runs {
				runs[i] = startRun(b, s, "nap", map[string]any{"i": i})
			}
			lat := make([]time.Duration, len(runs))
			var wg sync.WaitGroup
			began := time.Now()
			for a := range agents {
				wg.Go(func() {
					for i := a * perAgent; i < (a+1)*perAgent; i++ {
						d := []byte(fmt.Sprintf(`{"key":"bench-%d-%d","command":{"type":"PauseWorkflow","target":"execution:%s"}}`, agents, i, runs[i]))
						var res struct{ Outcomes []struct{ Status string } }
						t0 := time.Now()
						if st := agentHTTP(b, "POST", base+"/directives", cred.Token, d, &res); st != 202 || len(res.Outcomes) != 1 || res.Outcomes[0].Status != "applied" {
							b.Errorf("directive %d: %d %+v", i, st, res)
						}
						lat[i] = time.Since(t0)
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(began)
			for _, id := range runs[:3] {
				var ex struct{ Status string }
				agentHTTP(b, "GET", base+"/executions/"+id, cred.Token, nil, &ex)
				if ex.Status != "PAUSED" {
					b.Fatalf("run %s is %s after its PauseWorkflow answered 202", id, ex.Status)
				}
			}
			rate := float64(len(runs)) / elapsed.Seconds()
			raw := pgbenchInsert(b, env, agents, 5)
			b.Logf("directives, %d agents: %d in %s = %.0f/s; latency p50 %.1f ms, p99 %.1f ms; pgbench c%d %.0f tps; ratio %.3f",
				agents, len(runs), elapsed.Round(time.Millisecond), rate, ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)), agents, raw, rate/raw)
			b.ReportMetric(ms(percentile(lat, 0.5)), fmt.Sprintf("directive_p50_ms_c%d", agents))
			b.ReportMetric(ms(percentile(lat, 0.99)), fmt.Sprintf("directive_p99_ms_c%d", agents))
			b.ReportMetric(rate, fmt.Sprintf("directives/s_c%d", agents))
			b.ReportMetric(rate/raw, fmt.Sprintf("directive_ratio_c%d", agents))
		}

		// Signals/s: a backlog of events, read by one long-poll consumer
		// from where the supervisor was created.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range 300 {
			wg.Go(func() { sem <- struct{}{}; defer func() { <-sem }(); startRun(b, s, "chain", map[string]any{"i": i}) })
		}
		wg.Wait()
		time.Sleep(3 * time.Second) // let the chains finish: the backlog is complete
		got, after := 0, ""
		began := time.Now()
		for {
			var page struct {
				Signals []json.RawMessage
				Cursor  string
			}
			if st := agentHTTP(b, "GET", base+"/signals?limit=500&after="+after, cred.Token, nil, &page); st != 200 {
				b.Fatalf("signals: %d", st)
			}
			got += len(page.Signals)
			if len(page.Signals) == 0 {
				break
			}
			after = page.Cursor
		}
		elapsed := time.Since(began)
		raw := pgbenchInsert(b, env, 1, 5)
		b.Logf("signals: %d read in %s = %.0f/s by one long-poll consumer; pgbench c1 %.0f tps", got, elapsed.Round(time.Millisecond),
			float64(got)/elapsed.Seconds(), raw)
		if got < 300*10 {
			b.Fatalf("read %d signals, want at least %d", got, 300*10)
		}
		b.ReportMetric(float64(got)/elapsed.Seconds(), "signals/s")
		b.ReportMetric(float64(got)/elapsed.Seconds()/raw, "signals_ratio_c1")
		s.Stop()
	}
}
