// Package worker runs remote workers for Yukta's TASK nodes: it polls the
// worker API (/api/worker/v1) for the tasks of named queues, runs a typed
// handler on each under a concurrency limit, heartbeats every task in
// flight (and cancels the handler's context when the server says the task
// was cancelled), and answers each task once with complete or fail.
//
//	w, err := worker.New(worker.Config{URL: "http://127.0.0.1:8080", Token: key},
//		worker.Handle("images", func(ctx context.Context, t *worker.Task, in Image) (Thumb, error) {
//			return resize(ctx, in, t.IdempotencyKey)
//		}))
//	err = w.Run(ctx) // until ctx is done; then a graceful stop
//
// Delivery is at least once: a worker that dies or goes silent loses its
// task to another poll (attempt + 1). Send the task's IdempotencyKey with
// every side effect so that a second attempt changes nothing twice.
// docs/workers.md describes the protocol.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/yukta/yukta/api/apiclient"
)

// The worker's bounds and defaults, declared once.
const (
	// DefaultConcurrency is how many tasks run at once when Config says 0.
	DefaultConcurrency = 4
	// DefaultPollWait is how long one poll waits for a task (the server
	// allows at most MaxPollWait).
	DefaultPollWait = 20 * time.Second
	// MaxPollWait is the server's longest poll.
	MaxPollWait = 30 * time.Second
	// MaxPollTasks is the most tasks the server hands out in one poll.
	MaxPollTasks = 100
	// DefaultGrace is how long a stop lets running handlers finish before
	// it cancels their contexts.
	DefaultGrace = 10 * time.Second
	// heartbeatFraction: a task heartbeats every heartbeatTimeout /
	// heartbeatFraction, so two beats may be lost before the lease runs out.
	heartbeatFraction = 3
	// minBackoff and maxBackoff bound the pause after a failed call (a
	// server restarting, a network blip) before the next try.
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
	// callSlack is how long a call may take past its own wait (a poll's
	// wait, nothing for the others) before the worker gives up on it, so a
	// server that hangs cannot hold a worker forever.
	callSlack = 15 * time.Second
	// answerLimit bounds how long an answer is retried when the server
	// cannot be reached, past the task's deadline (after which the server
	// refuses it anyway).
	answerLimit = 5 * time.Minute
)

// Config says where the server is and how the worker runs.
type Config struct {
	// URL is the server's address, such as http://127.0.0.1:8080.
	URL string
	// Token is the API key sent as a bearer token (a key of the role
	// WORKER); empty sends none (a server without keys).
	Token string
	// Name names this worker in its own diagnostics (Logf); the server
	// knows a worker by its key.
	Name string
	// Concurrency is how many tasks run at once (DefaultConcurrency when 0).
	Concurrency int
	// PollWait is how long one poll waits for a task (DefaultPollWait when
	// 0, at most MaxPollWait).
	PollWait time.Duration
	// Grace is how long a stop lets running handlers finish before it
	// cancels their contexts (DefaultGrace when 0; negative: no grace).
	Grace time.Duration
	// HTTPClient makes the calls (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Logf receives the worker's own diagnostics (a failed poll, an answer
	// the server refused); nil drops them.
	Logf func(format string, args ...any)
}

// Handler runs the tasks of one queue. Handle makes one from a typed
// function.
type Handler interface {
	queue() string
	run(ctx context.Context, t *Task) (any, error)
}

type typed[In, Out any] struct {
	q  string
	fn func(ctx context.Context, t *Task, in In) (Out, error)
}

func (h typed[In, Out]) queue() string { return h.q }

func (h typed[In, Out]) run(ctx context.Context, t *Task) (any, error) {
	var in In
	if err := json.Unmarshal(t.Payload, &in); err != nil {
		// The message will not decode on another attempt either.
		return nil, Permanent(fmt.Errorf("the payload does not decode as %T: %w", in, err))
	}
	return h.fn(ctx, t, in)
}

// Handle makes the handler of queue: fn gets each task's payload decoded
// as In, and its Out is the task's output (encoded as JSON). An error fails
// the attempt: retryable (the node's retry policy applies) unless it is
// wrapped with Permanent. A payload that does not decode as In fails the
// attempt permanently.
func Handle[In, Out any](queue string, fn func(ctx context.Context, t *Task, in In) (Out, error)) Handler {
	return typed[In, Out]{q: queue, fn: fn}
}

// permanent marks an error that fails the node at once.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that the attempt's failure is not retried: the
// node fails at once.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err: err}
}

// IsPermanent says whether err was wrapped with Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Usage is the tokens a task's work used, reported with its output.
// Absent is not zero: leave it unset when the work used no model.
type Usage struct {
	Input, Output                    int64
	CacheRead, CacheWrite, Reasoning *int64
	// TokensKnown is false when the counts are estimates or partial.
	TokensKnown bool
}

// Provenance says where a cost figure comes from (docs/journal.md, "Spend").
type Provenance string

// The provenances a cost may have.
const (
	// Reported: a provider billed all of it.
	Reported Provenance = "reported"
	// Estimated: a model catalogue priced all of it.
	Estimated Provenance = "estimated"
	// Partial: some of each.
	Partial Provenance = "partial"
	// Unknown: nothing priced it.
	Unknown Provenance = "unknown"
)

// Cost is what a task's work cost, and where the figure comes from.
type Cost struct {
	USD float64
	// USDKnown is false when part of the work is not priced (USD is a floor).
	USDKnown   bool
	Provenance Provenance
}

// Task is one delivery of a TASK node's message to this worker.
type Task struct {
	ID             string
	LeaseToken     string
	Queue          string
	SessionID      string
	WorkflowID     string
	ExecutionID    string
	NodeID         string
	Attempt        int
	IdempotencyKey string
	// Payload is the message as JSON.
	Payload json.RawMessage
	// Deadline is when this attempt times out.
	Deadline time.Time
	// HeartbeatTimeout is how long the lease holds without a heartbeat.
	HeartbeatTimeout time.Duration

	w     *Worker
	mu    sync.Mutex
	port  string
	usage *Usage
	cost  *Cost
}

// SetPort sends the output on port instead of "default" (one of the
// node's declared ports).
func (t *Task) SetPort(port string) { t.mu.Lock(); t.port = port; t.mu.Unlock() }

// SetUsage reports the tokens the work used, with the output.
func (t *Task) SetUsage(u Usage) { t.mu.Lock(); t.usage = &u; t.mu.Unlock() }

// SetCost reports what the work cost, with the output.
func (t *Task) SetCost(c Cost) { t.mu.Lock(); t.cost = &c; t.mu.Unlock() }

// Log adds lines to the run's log under the task's node (level debug,
// info, warn or error). It fails once the task's lease is gone.
func (t *Task) Log(ctx context.Context, level string, messages ...string) error {
	lines := make([]apiclient.TaskLogLine, len(messages))
	for i, m := range messages {
		l := apiclient.TaskLogLineLevel(level)
		lines[i] = apiclient.TaskLogLine{Level: &l, Message: m}
	}
	res, err := t.w.c.AppendTaskLogsWithResponse(ctx, t.ID, apiclient.AppendTaskLogsJSONRequestBody{LeaseToken: t.LeaseToken, Lines: lines})
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return fmt.Errorf("logs of task %s: %d %s", t.ID, res.StatusCode(), strings.TrimSpace(string(res.Body)))
	}
	return nil
}

// Worker polls the queues of its handlers and runs their tasks.
type Worker struct {
	cfg      Config
	c        *apiclient.ClientWithResponses
	handlers map[string]Handler
	queues   []string
}

// New checks the config and makes a worker; Run starts it.
func New(cfg Config, handlers ...Handler) (*Worker, error) {
	if cfg.URL == "" {
		return nil, errors.New("worker: Config.URL is empty; give the server's address, such as http://127.0.0.1:8080")
	}
	if len(handlers) == 0 {
		return nil, errors.New("worker: no handlers; pass at least one worker.Handle(queue, fn)")
	}
	if cfg.Concurrency < 0 {
		return nil, fmt.Errorf("worker: Config.Concurrency is %d; it must be 0 (the default, %d) or more", cfg.Concurrency, DefaultConcurrency)
	}
	if cfg.PollWait < 0 || cfg.PollWait > MaxPollWait {
		return nil, fmt.Errorf("worker: Config.PollWait is %s; it must be 0 (the default, %s) to %s", cfg.PollWait, DefaultPollWait, MaxPollWait)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.PollWait == 0 {
		cfg.PollWait = DefaultPollWait
	}
	switch {
	case cfg.Grace == 0:
		cfg.Grace = DefaultGrace
	case cfg.Grace < 0:
		cfg.Grace = 0
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	w := &Worker{cfg: cfg, handlers: map[string]Handler{}}
	for _, h := range handlers {
		q := h.queue()
		if _, dup := w.handlers[q]; dup {
			return nil, fmt.Errorf("worker: two handlers for the queue %q; give each queue one", q)
		}
		w.handlers[q] = h
		w.queues = append(w.queues, q)
	}
	slices.Sort(w.queues)
	opts := []apiclient.ClientOption{}
	if cfg.HTTPClient != nil {
		opts = append(opts, apiclient.WithHTTPClient(cfg.HTTPClient))
	}
	if cfg.Token != "" {
		opts = append(opts, apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+cfg.Token)
			return nil
		}))
	}
	c, err := apiclient.NewClientWithResponses(strings.TrimSuffix(cfg.URL, "/"), opts...)
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.c = c
	return w, nil
}

// Run polls and runs tasks until ctx is done, then stops gracefully: it
// polls no more, lets the running handlers finish and answer within
// Config.Grace, then cancels their contexts and waits for them. It returns
// nil after a stop, or the error that ended it (a key the server refuses).
// A task leased by a poll that the stop cut short goes back to its queue
// when its lease runs out.
func (w *Worker) Run(ctx context.Context) error {
	// work is the handlers' context: cancelled when the grace runs out.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	slots := make(chan struct{}, w.cfg.Concurrency)
	var running sync.WaitGroup
	err := w.poll(ctx, work, slots, &running)

	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	grace := time.NewTimer(w.cfg.Grace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		w.cfg.Logf("worker %s: the grace of %s ran out; cancelling the tasks still running", w.cfg.Name, w.cfg.Grace)
		cancelWork()
		<-done
	}
	return err
}

// poll is the loop that takes tasks while ctx lasts.
func (w *Worker) poll(ctx, work context.Context, slots chan struct{}, running *sync.WaitGroup) error {
	backoff := minBackoff
	for {
		// Wait for one free slot, then take as many tasks as slots are free.
		select {
		case <-ctx.Done():
			return nil
		case slots <- struct{}{}:
		}
		free := 1
	more:
		for free < cap(slots) && free < MaxPollTasks {
			select {
			case slots <- struct{}{}:
				free++
			default:
				break more
			}
		}
		tasks, err := w.pollOnce(ctx, free)
		for range free - len(tasks) {
			<-slots
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var fatal fatalError
			if errors.As(err, &fatal) {
				return err
			}
			w.cfg.Logf("worker %s: poll: %v; again in %s", w.cfg.Name, err, backoff)
			if !sleep(ctx, backoff) {
				return nil
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		for _, t := range tasks {
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-slots }()
				w.runTask(work, t)
			}()
		}
	}
}

// fatalError is an answer a retry cannot change (a key refused).
type fatalError struct{ err error }

func (f fatalError) Error() string { return f.err.Error() }
func (f fatalError) Unwrap() error { return f.err }

func (w *Worker) pollOnce(ctx context.Context, n int) ([]*Task, error) {
	wait, max := int(w.cfg.PollWait/time.Second), n
	ctx, cancel := context.WithTimeout(ctx, w.cfg.PollWait+callSlack)
	defer cancel()
	res, err := w.c.PollTasksWithResponse(ctx, apiclient.PollTasksJSONRequestBody{Queues: w.queues, Wait: &wait, Max: &max})
	if err != nil {
		return nil, err
	}
	if res.JSON200 == nil {
		err := fmt.Errorf("poll %v: %d %s", w.queues, res.StatusCode(), strings.TrimSpace(string(res.Body)))
		switch res.StatusCode() {
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden:
			return nil, fatalError{err}
		}
		return nil, err
	}
	out := make([]*Task, 0, len(res.JSON200.Tasks))
	for _, a := range res.JSON200.Tasks {
		payload, err := json.Marshal(a.Payload)
		if err != nil {
			payload = []byte("null")
		}
		out = append(out, &Task{ID: a.TaskId, LeaseToken: a.LeaseToken, Queue: a.Queue, SessionID: a.SessionId,
			WorkflowID: a.WorkflowId, ExecutionID: a.ExecutionId, NodeID: a.NodeId, Attempt: a.Attempt,
			IdempotencyKey: a.IdempotencyKey, Payload: payload, Deadline: a.Deadline,
			HeartbeatTimeout: time.Duration(a.HeartbeatTimeoutMs) * time.Millisecond, w: w})
	}
	return out, nil
}

// runTask runs one task's handler beside its heartbeats, then answers.
func (w *Worker) runTask(work context.Context, t *Task) {
	ctx, cancel := context.WithCancelCause(work)
	defer cancel(nil)
	beats := make(chan struct{})
	beatCtx, stopBeats := context.WithCancel(ctx)
	go func() {
		defer close(beats)
		w.heartbeat(beatCtx, t, cancel)
	}()
	out, err := w.call(ctx, t)
	stopBeats()
	<-beats
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		// The server cancelled the task (or its lease is gone): an answer
		// would be refused.
		w.cfg.Logf("worker %s: task %s (attempt %d) not answered: %v", w.cfg.Name, t.ID, t.Attempt, cause)
		return
	}
	w.answer(work, t, out, err)
}

// call runs the handler, turning a panic into a failure.
func (w *Worker) call(ctx context.Context, t *Task) (out any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the handler panicked: %v", p)
		}
	}()
	return w.handlers[t.Queue].run(ctx, t)
}

// errCancelled is the cause of a task the server cancelled.
type errCancelled struct{ reason string }

func (e errCancelled) Error() string { return "the server cancelled the task: " + e.reason }

// heartbeat extends t's lease every HeartbeatTimeout / heartbeatFraction
// until ctx ends (the handler returned); it cancels the handler's context
// with the reason when the server says the task is cancelled or the lease
// is gone.
func (w *Worker) heartbeat(ctx context.Context, t *Task, cancel context.CancelCauseFunc) {
	every := max(t.HeartbeatTimeout/heartbeatFraction, 50*time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		call, done := context.WithTimeout(ctx, max(t.HeartbeatTimeout, callSlack))
		res, err := w.c.HeartbeatTaskWithResponse(call, t.ID, apiclient.HeartbeatTaskJSONRequestBody{LeaseToken: t.LeaseToken})
		done()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			w.cfg.Logf("worker %s: heartbeat of task %s: %v", w.cfg.Name, t.ID, err)
		case res.JSON200 != nil && res.JSON200.Cancelled:
			reason := "cancelled"
			if res.JSON200.Reason != nil {
				reason = *res.JSON200.Reason
			}
			cancel(errCancelled{reason: reason})
			return
		case res.StatusCode() == http.StatusNotFound || res.StatusCode() == http.StatusConflict:
			cancel(errCancelled{reason: fmt.Sprintf("%d %s", res.StatusCode(), strings.TrimSpace(string(res.Body)))})
			return
		case res.JSON200 == nil:
			w.cfg.Logf("worker %s: heartbeat of task %s: %d %s", w.cfg.Name, t.ID, res.StatusCode(), strings.TrimSpace(string(res.Body)))
		}
	}
}

// answer sends the task's complete or fail, trying again while the server
// cannot be reached (until the task's deadline and answerLimit).
func (w *Worker) answer(ctx context.Context, t *Task, out any, herr error) {
	until := time.Now().Add(answerLimit)
	if t.Deadline.After(time.Now()) && t.Deadline.Before(until) {
		until = t.Deadline
	}
	backoff := minBackoff
	for {
		status, body, err := w.send(ctx, t, out, herr)
		switch {
		case err == nil && status == http.StatusOK:
			return
		case err == nil && status != http.StatusTooManyRequests && status < 500:
			// Refused (409: the lease is gone; 422: the output does not
			// match the node's outputSchema): trying again changes nothing.
			w.cfg.Logf("worker %s: answer of task %s (attempt %d): %d %s", w.cfg.Name, t.ID, t.Attempt, status, body)
			return
		}
		if time.Now().Add(backoff).After(until) || ctx.Err() != nil {
			w.cfg.Logf("worker %s: gave up answering task %s (attempt %d): %v %d %s", w.cfg.Name, t.ID, t.Attempt, err, status, body)
			return
		}
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func (w *Worker) send(ctx context.Context, t *Task, out any, herr error) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, callSlack)
	defer cancel()
	if herr != nil {
		res, err := w.c.FailTaskWithResponse(ctx, t.ID, apiclient.FailTaskJSONRequestBody{LeaseToken: t.LeaseToken,
			Error: herr.Error(), Retryable: !IsPermanent(herr)})
		if err != nil {
			return 0, "", err
		}
		return res.StatusCode(), strings.TrimSpace(string(res.Body)), nil
	}
	t.mu.Lock()
	body := apiclient.CompleteTaskJSONRequestBody{LeaseToken: t.LeaseToken, Output: out}
	if t.port != "" {
		body.Port = &t.port
	}
	if u := t.usage; u != nil {
		body.Usage = &apiclient.TaskUsage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
			Reasoning: u.Reasoning, TokensKnown: u.TokensKnown}
	}
	if c := t.cost; c != nil {
		body.Cost = &apiclient.TaskCost{Usd: c.USD, UsdKnown: c.USDKnown, Provenance: apiclient.TaskCostProvenance(c.Provenance)}
	}
	t.mu.Unlock()
	res, err := w.c.CompleteTaskWithResponse(ctx, t.ID, body)
	if err != nil {
		return 0, "", err
	}
	return res.StatusCode(), strings.TrimSpace(string(res.Body)), nil
}

// sleep waits d or until ctx is done; false when ctx ended it.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
