// Package httpengine is the http engine (engine type "http"): it decides
// nothing itself, but posts each signal the runtime hands it to the
// supervisor's url, for a system outside the server that answers over the
// agent API. It stands on supervisorapp's Engine contract.
package httpengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// SignalPoster posts one signal to an external system
// (*egress.SignalPoster: the egress policy, no redirects, no proxy, a small
// cap on the reply, which is read and thrown away). It returns nil only when
// the system answered 2xx. Its errors must not carry header values or reply
// data: they are logged as they are.
type SignalPoster interface {
	PostSignal(ctx context.Context, url string, header map[string]string, body []byte) error
}

// Deps are what the http engine needs.
type Deps struct {
	Poster SignalPoster
	// Getenv reads the server's environment (os.Getenv). The engine asks it
	// only for names on AllowedEnv.
	Getenv func(string) string
	// AllowedEnv are the environment variables a header may name as
	// ${env.NAME} (YUKTA_SUPERVISOR_ENV_ALLOWED). Saving a supervisor that
	// names another is refused; one stored before the list shrank sends
	// such a reference as nothing, and the engine reports it once.
	AllowedEnv []string
	Now        func() time.Time
	// OnError hears what the engine could not do: a failed post (never
	// retried), a header reference it sent empty. The texts carry no header
	// value.
	OnError func(supervisorID string, err error)
}

// The http engine's settings: defaults and bounds (seed 000, `http`).
// They are declared once in the domain (supervisor.HTTP*), which the
// catalogue, the validator and this engine read.
const (
	DefaultTimeout       = supervisor.HTTPDefaultTimeoutMs * time.Millisecond
	MaxTimeout           = supervisor.HTTPMaxTimeoutMs * time.Millisecond
	DefaultMaxConcurrent = supervisor.HTTPDefaultMaxConcurrent
	MaxConcurrent        = supervisor.HTTPMaxMaxConcurrent
)

// errClosed is what Handle answers after Close: the signal was
// not posted, and comes again to the next engine.
var errClosed = fmt.Errorf("httpengine: the http engine is closed: %w", fault.ErrUnavailable)

// NewFactory returns the factory of the http engine (engine type
// "http"): each signal of a kind the engine takes is posted as its wire
// form {"cursor", "kind", "signal"} to settings.url, with settings.headers
// (${env.NAME} expanded for allowed names) and settings.secretHeaders. The
// engine decides nothing itself: the external system sends its directives
// over the agent API.
//
// Handle does not wait for the post, so a slow system does not hold the
// runtime's signal loop; it waits only for one of maxConcurrent slots, which
// is the back-pressure that keeps the cursor from running far ahead of what
// was posted, with at most maxConcurrent posts in memory. A failed post is
// reported and not retried: delivery to the URL is best effort, and the
// system reads what it missed with GET /api/agent/v1/signals?after=.
//
// The engine's posts live as long as the ctx the factory is given (the
// runtime's context for this engine) or until Close, which cancels and
// joins them.
func NewFactory(d Deps) supervisorapp.EngineFactory {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.OnError == nil {
		d.OnError = func(string, error) {}
	}
	if d.Getenv == nil {
		d.Getenv = func(string) string { return "" }
	}
	allowed := map[string]bool{}
	for _, n := range d.AllowedEnv {
		allowed[strings.TrimSpace(n)] = true
	}
	return func(ctx context.Context, sup supervisor.Supervisor, _ supervisorapp.Fence, _ []byte) (supervisorapp.Engine, error) {
		if sup.EngineType() != "http" {
			return nil, fmt.Errorf("httpengine: supervisor %s has engine %s, not http", sup.ID(), sup.EngineType())
		}
		// Validated when saved (supervisor.Parse); an error names the
		// setting a stored document the rules no longer accept must fix.
		cfg, err := sup.HTTPSettings()
		if err != nil {
			return nil, err
		}
		if cfg.URL != "" && d.Poster == nil {
			return nil, fmt.Errorf("httpengine: supervisor %s: the http engine has no poster; this is a wiring bug: %w", sup.ID(), fault.ErrUnavailable)
		}
		ectx, cancel := context.WithCancel(ctx)
		return &httpEngine{d: d, allowed: allowed, sup: sup, cfg: cfg, ctx: ectx, cancel: cancel,
			slots: make(chan struct{}, cfg.MaxConcurrent), reported: map[string]bool{}}, nil
	}
}

type httpEngine struct {
	d       Deps
	allowed map[string]bool
	sup     supervisor.Supervisor
	cfg     supervisor.HTTPSettings
	// ctx ends at Close or when the runtime stops the engine; every post
	// runs under it.
	ctx    context.Context
	cancel context.CancelFunc
	// slots holds one token per post in flight.
	slots chan struct{}
	mu    sync.Mutex // guards closed against wg.Add after Close's Wait began
	// closed is set by Close; no post starts after it.
	closed bool
	wg     sync.WaitGroup
	// reported are the header references already reported, so a refused
	// name is logged once per engine, not once per signal. Only Handle
	// (one goroutine) touches it.
	reported map[string]bool
}

// Handle posts sig in the background once a slot is free. It returns an
// error only when no slot came before ctx ended or the engine closed: the
// signal was not posted and the runtime hands it again.
func (e *httpEngine) Handle(ctx context.Context, sig supervisor.Signal) error {
	if e.cfg.URL == "" {
		return nil
	}
	body, err := json.Marshal(sig)
	if err != nil {
		// A signal that cannot be written never will be; retrying would
		// stall the supervisor.
		e.d.OnError(e.sup.ID(), fmt.Errorf("http engine: signal %s (%s) cannot be written as JSON; not posted: %w", sig.Cursor(), sig.Kind(), err))
		return nil
	}
	header := e.header()
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-e.ctx.Done():
		return errClosed
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.slots
		return errClosed
	}
	e.wg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		defer func() { <-e.slots }()
		e.post(sig, header, body)
	}()
	return nil
}

// post sends one signal and reports a failure; it never retries.
func (e *httpEngine) post(sig supervisor.Signal, header map[string]string, body []byte) {
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
	defer cancel()
	start := e.d.Now()
	err := e.d.Poster.PostSignal(ctx, e.cfg.URL, header, body)
	if err == nil || e.ctx.Err() != nil {
		return // delivered, or the engine stopped: a stop is not a failure
	}
	took := e.d.Now().Sub(start).Round(time.Millisecond)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within timeoutMs (%d): %w", e.cfg.Timeout.Milliseconds(), err)
	}
	e.d.OnError(e.sup.ID(), &PostFailedError{Cursor: sig.Cursor(), Kind: sig.Kind(), Where: e.cfg.Where, Took: took, Err: err})
}

// header builds the headers of one post: plain headers with their
// references expanded, then secret headers as they are (they take no
// references: a secret belongs in the secret, not in the environment).
func (e *httpEngine) header() map[string]string {
	out := make(map[string]string, len(e.cfg.Headers)+len(e.cfg.SecretHeaders))
	for name, v := range e.cfg.Headers {
		// The references SavePolicy checks when a supervisor is saved.
		out[name] = supervisor.ExpandEnvRefs(v, func(n string) string { return e.env(name, n) })
	}
	for name, v := range e.cfg.SecretHeaders {
		out[name] = v
	}
	return out
}

// env returns the value header name's reference to variable n expands to:
// nothing for a name off the allow-list (the environment is not even read),
// an unset variable, or a value no header can carry.
func (e *httpEngine) env(header, n string) string {
	if !e.allowed[n] {
		e.report(header, n, "is not in "+supervisorapp.SettingEnvAllowed+", so it was sent empty; ask the operator to add the name there, or change the header")
		return ""
	}
	v := e.d.Getenv(n)
	switch {
	case v == "":
		e.report(header, n, "is not set in the server's environment, so it was sent empty")
	case strings.ContainsFunc(v, func(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }):
		e.report(header, n, "holds a control character or line break, which no header can carry, so it was sent empty")
		return ""
	}
	return v
}

func (e *httpEngine) report(header, n, why string) {
	key := header + "\x00" + n
	if e.reported[key] {
		return
	}
	e.reported[key] = true
	e.d.OnError(e.sup.ID(), fault.Newf(fault.ErrForbidden, "http engine: header %s: ${env.%s} %s", header, n, why))
}

// State is nil: the engine keeps nothing across restarts.
func (e *httpEngine) State() ([]byte, error) { return nil, nil }

// Close cancels the posts in flight and waits for them to return; Handle
// posts nothing after it. It may be called more than once.
func (e *httpEngine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
	return nil
}

// PostFailedError is what OnError hears for a failed post: which signal,
// where (the URL without its query), after how long, and why. It matches
// fault.ErrUnavailable and the poster's error with errors.Is and errors.As.
type PostFailedError struct {
	Cursor string
	Kind   supervisor.SignalKind
	Where  string
	Took   time.Duration
	Err    error
}

// Error says what failed and where the system finds the signal again.
func (e *PostFailedError) Error() string {
	return fmt.Sprintf("http engine: the post of signal %s (%s) to %s failed after %s and is not retried; the system reads it again with GET /api/agent/v1/signals?after=<the cursor before it>: %v",
		e.Cursor, e.Kind, e.Where, e.Took, e.Err)
}

// Unwrap returns the kind and the poster's error.
func (e *PostFailedError) Unwrap() []error { return []error{fault.ErrUnavailable, e.Err} }
