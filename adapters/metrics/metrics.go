// Package metrics exports Yukta's Prometheus metrics: HTTP requests and
// latencies, authentication failures and rate limiting, the engine's claims,
// commits and node outcomes, runs started and ended and their durations, the
// depth of the work queue, the executions that have not ended and the
// scheduler limits' queue and slots (queried when scraped), the journal's
// lag and the build, plus the Go runtime and process metrics.
// Everything lives in a registry of its own, never the global default, so
// two servers in one process (tests) do not collide. docs/operations.md
// lists every metric.
//
// Every metric describes the whole server: the queue gauges, the engine's
// counters, even the runtime's, move with the work of every session. So the
// REST door serves them only to keys without a session list (and in open
// mode); a session-limited key gets 403 (docs/security.md).
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/build"
)

// DefaultQueueTimeout caps the queue depth query of one scrape.
const DefaultQueueTimeout = time.Second

// QueueDepth counts the live work items of every instance at one moment.
type QueueDepth struct {
	// Ready items are due and waiting for a claim.
	Ready int64
	// Delayed items are ready but due later: a retry backoff or a timer.
	Delayed int64
	// Held items wait behind a closed gate (a paused execution or node, a
	// step-mode node without credit).
	Held int64
	// Running items are claimed under a lease: running, or waiting for
	// their result to commit.
	Running int64
	// Parked items wait for the answer to an input request.
	Parked int64
	// Tasks are the worker queues with live tasks.
	Tasks []TaskQueueDepth
}

// Options configures New.
type Options struct {
	// QueueDepthFunc, when set, is called at each scrape for the queue
	// gauges. It must honour ctx's deadline.
	QueueDepthFunc func(ctx context.Context) (QueueDepth, error)
	// QueueTimeout caps QueueDepthFunc; zero means DefaultQueueTimeout.
	QueueTimeout time.Duration
	// OnQueueError, when set, hears why a queue depth query failed (the
	// scrape then has no queue gauges, and yukta_queue_depth_errors_total
	// counts the failure).
	OnQueueError func(err error)
	// SchedulerFunc, when set, is called at each scrape for the scheduler
	// gauges (yukta_scheduler_*), within QueueTimeout. It must honour ctx's
	// deadline.
	SchedulerFunc func(ctx context.Context) (SchedulerDepth, error)
	// OnSchedulerError, when set, hears why a scheduler query failed.
	OnSchedulerError func(err error)
	// Build, when its Version is set, is exported as yukta_build_info.
	Build build.Info
	// RunSeriesLimit caps the (session, workflow) pairs the run metrics
	// label apart; zero means DefaultRunSeriesLimit.
	RunSeriesLimit int
}

// Metrics holds every metric and the registry that exports them. Its
// methods are safe for concurrent use and cheap enough for hot paths: each
// is a few atomic operations on series that already exist, except the first
// use of a new label combination.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	authFailures *prometheus.CounterVec
	rateLimited  *prometheus.CounterVec
	keyReloads   *prometheus.CounterVec

	claimed        prometheus.Counter
	claimBatch     prometheus.Histogram
	commits        prometheus.Counter
	committed      prometheus.Counter
	commitDuration prometheus.Histogram
	nodeResults    []prometheus.Counter // by executionapp.NodeOutcome
	engineErrors   *prometheus.CounterVec
	startsSkipped  *prometheus.CounterVec

	runs        *runMetrics
	retention   *retentionMetrics
	loops       *loopMetrics
	supervisors *supervisorMetrics
	tasks       *taskMetrics

	lag atomic.Pointer[func() int64]
}

var _ executionapp.EngineMetrics = (*Metrics)(nil)

// latencyBuckets suit requests and commits: from 1 ms to 10 s.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// engineOps are the op values of EngineError.
var engineOps = []string{"claim", "heartbeat", "reap", "commit"}

// New returns the metrics with a fresh registry holding them and the Go
// runtime and process collectors.
func New(o Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_http_requests_total",
			Help: "HTTP requests answered, by surface, method, route template and status code.",
		}, []string{"surface", "method", "route", "status"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "yukta_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by surface and route template; a stream counts until it ends.",
			Buckets: latencyBuckets,
		}, []string{"surface", "route"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_auth_failures_total",
			Help: "Requests refused because authentication failed, by surface and reason.",
		}, []string{"surface", "reason"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_rate_limited_total",
			Help: "Requests refused with 429 by a rate limit, by surface and limit scope.",
		}, []string{"surface", "scope"}),
		keyReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_key_file_reloads_total",
			Help: "Times the key file was read after a change or SIGHUP, by result: applied, unchanged, refused (malformed) or unreadable; after the last two the last good keys stay in force.",
		}, []string{"result"}),
		claimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yukta_engine_claimed_total",
			Help: "Work items this instance claimed.",
		}),
		claimBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "yukta_engine_claim_batch_size",
			Help:    "Items taken by each claim that took any.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10), // 1 … 512
		}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yukta_engine_commits_total",
			Help: "Transactions that committed a batch of node results.",
		}),
		committed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "yukta_engine_committed_results_total",
			Help: "Node results in the batches committed (those whose lease was lost included).",
		}),
		commitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "yukta_engine_commit_duration_seconds",
			Help:    "Time to commit one batch of node results, retries of the transaction included.",
			Buckets: latencyBuckets,
		}),
		engineErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "yukta_engine_errors_total",
			Help: "Failures the engine survived, by operation (claim, heartbeat, reap, commit).",
		}, []string{"op"}),
		startsSkipped: newStartsSkipped(),
		runs:          newRunMetrics(o.RunSeriesLimit),
		retention:     newRetentionMetrics(),
		loops:         newLoopMetrics(),
		supervisors:   newSupervisorMetrics(),
		tasks:         newTaskMetrics(),
	}
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "yukta_node_results_total",
		Help: "Node results committed, by outcome.",
	}, []string{"outcome"})
	for _, o := range executionapp.NodeOutcomes() {
		m.nodeResults = append(m.nodeResults, results.WithLabelValues(o.String()))
	}
	for _, op := range engineOps {
		m.engineErrors.WithLabelValues(op)
	}
	queueErrors := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "yukta_queue_depth_errors_total",
		Help: "Scrapes whose queue depth query failed or timed out; they exported no yukta_queue_* gauges.",
	})
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.httpDuration, m.authFailures, m.rateLimited, m.keyReloads,
		m.claimed, m.claimBatch, m.commits, m.committed, m.commitDuration, results, m.engineErrors,
		m.startsSkipped, lagCollector{m: m},
	)
	m.reg.MustRegister(m.runs.collectors()...)
	m.reg.MustRegister(m.retention.collectors()...)
	m.reg.MustRegister(m.loops.collectors()...)
	m.reg.MustRegister(m.supervisors.collectors()...)
	m.reg.MustRegister(m.tasks.collectors()...)
	if o.Build.Version != "" {
		m.reg.MustRegister(buildInfo(o.Build))
	}
	timeout := o.QueueTimeout
	if timeout <= 0 {
		timeout = DefaultQueueTimeout
	}
	if o.QueueDepthFunc != nil {
		m.reg.MustRegister(newQueueCollector(o.QueueDepthFunc, timeout, queueErrors, o.OnQueueError))
	}
	if o.SchedulerFunc != nil {
		m.reg.MustRegister(newSchedulerCollector(o.SchedulerFunc, timeout, o.OnSchedulerError))
	}
	return m
}

// Handler serves the registry in the Prometheus text format, or in the
// OpenMetrics text format to a scraper that asks for it (Accept:
// application/openmetrics-text). At most a few scrapes run at once (each
// queries the queue depth); more get 503.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:            m.reg, // counts the handler's own errors
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 3,
		EnableOpenMetrics:   true,
	})
}

// buildInfo is the constant yukta_build_info gauge: 1, with the build in its
// labels, so a query can join or group by version.
func buildInfo(b build.Info) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "yukta_build_info",
		Help:        "The build of this server: always 1; the version, VCS revision and Go toolchain are labels.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}

// Registry returns the registry, for tests and for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveRequest records one answered HTTP request. surface names the part
// of the server that answered ("rest", "mcp", "agent"); route is the
// matched route template such as "/api/sessions/:sessionId", never the raw
// path, or "" (recorded as "unmatched") when no route matched. Both must
// come from a fixed set: every distinct value is a new series. Methods
// outside the standard ones are recorded as "OTHER".
func (m *Metrics) ObserveRequest(surface, method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.httpRequests.WithLabelValues(surface, normalMethod(method), route, statusLabel(status)).Inc()
	m.httpDuration.WithLabelValues(surface, route).Observe(d.Seconds())
}

// AuthFailure records a request refused for failed authentication. reason
// is one of a fixed set, such as "missing" or "invalid".
func (m *Metrics) AuthFailure(surface, reason string) {
	m.authFailures.WithLabelValues(surface, reason).Inc()
}

// KeyFileReload records one reading of the key file; result is one of
// applied, unchanged, refused and unreadable.
func (m *Metrics) KeyFileReload(result string) {
	m.keyReloads.WithLabelValues(result).Inc()
}

// RateLimited records a request refused by a rate limit; scope names the
// limit, such as "key", "source" or "auth-failures".
func (m *Metrics) RateLimited(surface, scope string) {
	m.rateLimited.WithLabelValues(surface, scope).Inc()
}

// SetLagFunc sets how far the journal observer trails the event outbox, in
// events; it is called at each scrape. Until it is set (or after it is set
// to nil) yukta_journal_lag_events is not exported.
func (m *Metrics) SetLagFunc(f func() int64) {
	if f == nil {
		m.lag.Store(nil)
		return
	}
	m.lag.Store(&f)
}

// Claimed implements executionapp.EngineMetrics.
func (m *Metrics) Claimed(n int) {
	if n <= 0 {
		return
	}
	m.claimed.Add(float64(n))
	m.claimBatch.Observe(float64(n))
}

// Committed implements executionapp.EngineMetrics.
func (m *Metrics) Committed(items int, d time.Duration) {
	m.commits.Inc()
	m.committed.Add(float64(items))
	m.commitDuration.Observe(d.Seconds())
}

// NodeResults implements executionapp.EngineMetrics.
func (m *Metrics) NodeResults(o executionapp.NodeOutcome, n int) {
	if int(o) < len(m.nodeResults) && n > 0 {
		m.nodeResults[o].Add(float64(n))
	}
}

// EngineError implements executionapp.EngineMetrics.
func (m *Metrics) EngineError(op string) {
	m.engineErrors.WithLabelValues(op).Inc()
}

func normalMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return method
	}
	return "OTHER"
}

// statusLabels holds the label of every valid status code, so recording a
// request does not format one.
var statusLabels = func() (s [600]string) {
	for i := 100; i < len(s); i++ {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

func statusLabel(code int) string {
	if code >= 100 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return "other"
}

// lagCollector exports the journal lag while a lag function is set.
type lagCollector struct{ m *Metrics }

var lagDesc = prometheus.NewDesc("yukta_journal_lag_events",
	"Events committed to the outbox that the journal observer has not recorded yet.", nil, nil)

func (c lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc }

func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	if f := c.m.lag.Load(); f != nil {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64((*f)()))
	}
}
