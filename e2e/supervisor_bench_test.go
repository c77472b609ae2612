package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BenchmarkRulesSupervisor measures a rules supervisor with 10 rules under
// the engine benchmark's load (10-node chains started by 8 clients): events
// per second it evaluates, and its signal lag, the time from an event's
// commit to the supervisor's cursor passing it (p50, p99; sampled every
// 5 ms, so each lag is within 5 ms of the truth). Every rule's `if` never
// holds, so every NodeStatusChanged is evaluated by all ten and nothing
// fires. In event the ifs read only the event (no run facts are needed);
// in execution they read the execution variable too (the run's facts,
// read from the database). The engine's own transitions/s with and
// without the supervisor show what it costs. Run:
//
//	go test ./e2e -run '^$' -bench RulesSupervisor -benchtime 1x -v
func BenchmarkRulesSupervisor(b *testing.B) {
	b.Run("event", func(b *testing.B) { benchRulesSupervisor(b, "event.data.to == 'NEVER_%d' && event.nodeId != ''") })
	b.Run("execution", func(b *testing.B) { benchRulesSupervisor(b, "execution.status == 'NEVER_%d' && event.nodeId != ''") })
}

// benchRulesSupervisor runs the scenario with ten rules whose if is cond
// with the rule's number in place of %d.
func benchRulesSupervisor(b *testing.B, cond string) {
	env := durableCluster(b)
	for range b.N {
		s := benchServer(b, env)
		applyDoc(b, s, "sup", linearSession("sup", 10))
		withoutTPS, _ := chainLoad(b, s, 200)

		var rules []any
		for i := range 10 {
			rules = append(rules, map[string]any{"id": fmt.Sprintf("r%d", i),
				"when": map[string]any{"event": "NodeStatusChanged", "if": fmt.Sprintf(cond, i)},
				"then": map[string]any{"command": "PauseWorkflow"}})
		}
		doc, _ := json.Marshal(map[string]any{"name": "bench", "owns": []string{"session:sup"},
			"engine": map[string]any{"type": "rules", "settings": map[string]any{"schemaVersion": 1, "rules": rules}}})
		res, err := s.Client.PutSupervisorWithBodyWithResponse(context.Background(), "bench", nil, jsonType, bytes.NewReader(doc))
		if err != nil || res.StatusCode() != 201 {
			b.Fatalf("apply the supervisor: %v %s", err, res.Body)
		}
		conn, err := pgx.Connect(context.Background(), env.dsn)
		if err != nil {
			b.Fatal(err)
		}
		startSeq := int64(0)
		for startSeq == 0 { // the runtime has taken the supervisor
			_ = conn.QueryRow(context.Background(), `SELECT seq FROM supervisor_cursors WHERE supervisor_id = 'bench'`).Scan(&startSeq)
			time.Sleep(10 * time.Millisecond)
		}

		// Sample the cursor while the load runs, on a connection of its own;
		// each event's lag is when the cursor was first seen past it, minus
		// its commit time.
		sampler, err := pgx.Connect(context.Background(), env.dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer sampler.Close(context.Background())
		var lags []time.Duration
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var handled int64
		var sampleErr error
		wg.Go(func() {
			last := startSeq
			for {
				var cur int64
				if err := sampler.QueryRow(context.Background(), `SELECT seq FROM supervisor_cursors WHERE supervisor_id = 'bench'`).Scan(&cur); err != nil {
					sampleErr = err
					return
				}
				seen := time.Now()
				if cur > last {
					rows, err := sampler.Query(context.Background(), `SELECT at FROM events WHERE seq > $1 AND seq <= $2 AND session_id = 'sup'`, last, cur)
					if err != nil {
						sampleErr = err
						return
					}
					for rows.Next() {
						var at time.Time
						_ = rows.Scan(&at)
						lags = append(lags, seen.Sub(at))
					}
					rows.Close()
					handled += cur - last
					last = cur
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
		withTPS, elapsed := chainLoad(b, s, 200)
		// Let the supervisor catch up, then stop sampling.
		var head int64
		_ = conn.QueryRow(context.Background(), `SELECT max(seq) FROM events`).Scan(&head)
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			var cur int64
			_ = conn.QueryRow(context.Background(), `SELECT seq FROM supervisor_cursors WHERE supervisor_id = 'bench'`).Scan(&cur)
			if cur >= head {
				break
			}
		}
		caughtUp := time.Since(elapsed)
		close(stop)
		wg.Wait()
		if sampleErr != nil {
			b.Fatal(sampleErr)
		}
		var directives int
		_ = conn.QueryRow(context.Background(), `SELECT count(*) FROM supervisor_directives WHERE supervisor_id = 'bench'`).Scan(&directives)
		conn.Close(context.Background())
		_ = s.Stop()
		if len(lags) == 0 || directives != 0 {
			b.Fatalf("%d lags sampled, %d directives (want some lags, no directive)", len(lags), directives)
		}
		b.ReportMetric(float64(len(lags))/caughtUp.Seconds(), "events/s")
		b.ReportMetric(ms(percentile(lags, 0.5)), "lag_p50_ms")
		b.ReportMetric(ms(percentile(lags, 0.99)), "lag_p99_ms")
		b.ReportMetric(withoutTPS, "runs/s_without")
		b.ReportMetric(withTPS, "runs/s_with")
	}
}

// chainLoad starts runs of the "sup" chain from 8 clients and waits for
// them all; it returns runs/s and when the load began.
func chainLoad(b *testing.B, s *server, runs int) (float64, time.Time) {
	began := time.Now()
	ids := make([]string, runs)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				ids[i] = startRun(b, s, "sup", map[string]any{"i": i})
			}
		})
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, id := range ids {
		waitDone(b, s, "sup", id)
	}
	return float64(runs) / time.Since(began).Seconds(), began
}
