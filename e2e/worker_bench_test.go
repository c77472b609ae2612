package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// BenchmarkWorkerTasks measures remote workers on the durable cluster, as
// workers see it over the worker API: tasks/s that 4 workers take and
// complete (each poll takes up to 32, each task is one complete), for the
// tasks of many runs and for the tasks one run fans out, beside pgbench
// single-row insert commits at 1 and 4 clients; and, on an idle
// system, the latency of one task: start → delivery to a worker already
// waiting in a long poll, the complete's round trip, and complete → the
// next node done (its endedAt, the server's stamp).
func BenchmarkWorkerTasks(b *testing.B) {
	env := durableCluster(b)
	ctx := context.Background()
	for range b.N {
		s := benchServer(b, env)
		c := s.Client
		applyDoc(b, s, "fan", []byte(`{"name":"fan","workflows":[{"workflowId":"w","nodes":[{"nodeId":"in","type":"MANUAL"},
			{"nodeId":"split","type":"SPLIT","config":{"field":"items"}},{"nodeId":"work","type":"TASK","config":{"queue":"fan","retry":{"maxAttempts":1}}},
			{"nodeId":"out","type":"LOG","config":{"message":"done"}}],
			"edges":[{"source":"in","target":"split"},{"source":"split","target":"work"},{"source":"work","target":"out"}]}]}`))
		applyDoc(b, s, "one", []byte(`{"name":"one","workflows":[{"workflowId":"w","nodes":[{"nodeId":"in","type":"MANUAL"},
			{"nodeId":"work","type":"TASK","config":{"queue":"one"}},{"nodeId":"out","type":"RESULT"}],
			"edges":[{"source":"in","target":"work"},{"source":"work","target":"out"}]}]}`))

		// Throughput: the tasks of many runs (one each), then the tasks one
		// run fans out.
		tasks, workers := benchTasks(), 4
		raw1, raw4 := pgbenchInsert(b, env, 1, 5), pgbenchInsert(b, env, workers, 5)
		var sem = make(chan struct{}, 16)
		var starts sync.WaitGroup
		for i := range tasks {
			starts.Go(func() { sem <- struct{}{}; defer func() { <-sem }(); startRun(b, s, "one", i) })
		}
		starts.Wait()
		elapsed := drainTasks(b, c, "one", tasks, workers)
		rate := float64(tasks) / elapsed.Seconds()
		b.Logf("tasks of %d runs: %d by %d workers in %s = %.0f/s; pgbench c1 %.0f tps (ratio %.3f), c%d %.0f tps (ratio %.3f)",
			tasks, tasks, workers, elapsed.Round(time.Millisecond), rate, raw1, rate/raw1, workers, raw4, rate/raw4)
		b.ReportMetric(rate, "tasks/s")
		b.ReportMetric(rate/raw1, "task_ratio_c1")
		b.ReportMetric(rate/raw4, fmt.Sprintf("task_ratio_c%d", workers))

		items := make([]int, tasks)
		for i := range items {
			items[i] = i
		}
		id := startRun(b, s, "fan", map[string]any{"items": items})
		elapsed = drainTasks(b, c, "fan", tasks, workers)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			res, err := c.GetExecutionWithResponse(ctx, "fan", id)
			if err == nil && res.JSON200 != nil && res.JSON200.Status == apiclient.ExecutionStatusSUCCESS {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the fan run did not end: %v", res)
			}
		}
		fan := float64(tasks) / elapsed.Seconds()
		b.Logf("tasks of one run: %d by %d workers in %s = %.0f/s (ratio c1 %.3f)", tasks, workers, elapsed.Round(time.Millisecond), fan, fan/raw1)
		b.ReportMetric(fan, "one_run_tasks/s")

		// Latency on an idle system: one worker waits in a long poll.
		trials := 200
		deliver, roundTrip, next := make([]time.Duration, trials), make([]time.Duration, trials), make([]time.Duration, trials)
		for i := range trials {
			type polled struct {
				task apiclient.Task
				at   time.Time
			}
			got := make(chan polled, 1)
			go func() {
				wait := 30
				res, err := c.PollTasksWithResponse(ctx, apiclient.PollTasksJSONRequestBody{Queues: []string{"one"}, Wait: &wait})
				if err != nil || res.JSON200 == nil || len(res.JSON200.Tasks) != 1 {
					b.Errorf("poll: %v %v", err, res)
					close(got)
					return
				}
				got <- polled{res.JSON200.Tasks[0], time.Now()}
			}()
			time.Sleep(5 * time.Millisecond) // the poll is waiting
			t0 := time.Now()
			eid := startRun(b, s, "one", i)
			p, ok := <-got
			if !ok {
				b.FailNow()
			}
			deliver[i] = p.at.Sub(t0)
			t1 := time.Now()
			r, err := c.CompleteTaskWithResponse(ctx, p.task.TaskId, apiclient.CompleteTaskJSONRequestBody{LeaseToken: p.task.LeaseToken, Output: i})
			if err != nil || r.JSON200 == nil {
				b.Fatalf("complete: %v %s", err, r.Body)
			}
			roundTrip[i] = time.Since(t1)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				res, err := c.GetExecutionWithResponse(ctx, "one", eid)
				if err == nil && res.JSON200 != nil && res.JSON200.Status == apiclient.ExecutionStatusSUCCESS {
					for _, n := range res.JSON200.Nodes {
						if n.NodeId == "out" && n.EndedAt != nil {
							next[i] = n.EndedAt.Sub(t1)
						}
					}
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("run %s did not end", eid)
				}
			}
		}
		b.Logf("one task, idle: start → delivery to a waiting poll p50 %.1f ms, p99 %.1f ms; complete round trip p50 %.1f ms, p99 %.1f ms; complete sent → next node done p50 %.1f ms, p99 %.1f ms",
			ms(percentile(deliver, .5)), ms(percentile(deliver, .99)), ms(percentile(roundTrip, .5)), ms(percentile(roundTrip, .99)),
			ms(percentile(next, .5)), ms(percentile(next, .99)))
		b.ReportMetric(ms(percentile(deliver, .5)), "deliver_p50_ms")
		b.ReportMetric(ms(percentile(next, .5)), "complete_to_next_p50_ms")
		b.ReportMetric(ms(percentile(next, .99)), "complete_to_next_p99_ms")
		s.Stop()
	}
}

// drainTasks has workers poll queue and complete each task until n are
// done, and returns how long it took.
func drainTasks(b *testing.B, c *apiclient.ClientWithResponses, queue string, n, workers int) time.Duration {
	ctx := context.Background()
	var done atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for range workers {
		wg.Go(func() {
			wait, max := 1, 32
			for done.Load() < int64(n) {
				res, err := c.PollTasksWithResponse(ctx, apiclient.PollTasksJSONRequestBody{Queues: []string{queue}, Wait: &wait, Max: &max})
				if err != nil || res.JSON200 == nil {
					b.Errorf("poll: %v %v", err, res)
					return
				}
				for _, t := range res.JSON200.Tasks {
					r, err := c.CompleteTaskWithResponse(ctx, t.TaskId, apiclient.CompleteTaskJSONRequestBody{LeaseToken: t.LeaseToken, Output: t.Payload})
					if err != nil || r.JSON200 == nil {
						b.Errorf("complete: %v %s", err, r.Body)
						return
					}
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(began)
}

// benchTasks is how many tasks the throughput part runs
// (YUKTA_BENCH_TASKS, default 2,000).
func benchTasks() int {
	if n, err := strconv.Atoi(os.Getenv("YUKTA_BENCH_TASKS")); err == nil && n > 0 {
		return n
	}
	return 2000
}
