package authn

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/yukta/yukta/domain/access"
)

// Recheck is how often a request that is still open (an event stream, a
// long poll, an MCP call) checks again that the key which opened it
// authenticates as it did: a key removed, revoked or changed ends its open
// requests within about this long.
const Recheck = 500 * time.Millisecond

// Why Hold ends a request: the cause of its context. Both say what to do,
// since edges show them to the client.
var (
	// ErrKeyGone: the key no longer authenticates on the request's surface.
	ErrKeyGone = errors.New("the API key that opened this request is no longer valid (it was removed, revoked or rotated); reconnect with a valid key")
	// ErrKeyChanged: the key authenticates as someone else now (another
	// role or session list).
	ErrKeyChanged = errors.New("the API key that opened this request changed (its role or session list is not what it was); reconnect to go on with what the key may do now")
)

// Ended returns ErrKeyGone or ErrKeyChanged when Hold ended ctx's request,
// and nil otherwise (the request is open, or ended for another reason).
func Ended(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrKeyGone) || errors.Is(cause, ErrKeyChanged) {
		return cause
	}
	return nil
}

// Hold keeps r's key under watch while the request lasts: it returns r with
// a context that is cancelled, with cause ErrKeyGone or ErrKeyChanged (see
// Ended), once the secret r presented no longer authenticates on surface
// as p, through Authenticate, so it works for every source of keys. The
// first check runs Recheck after Hold, then every Recheck, so a request
// shorter than that costs one timer. ended (may be nil) hears the cause
// once, from the timer's goroutine. An error of Authenticate other than
// ErrInvalid and ErrMissing (a key store that is down) ends nothing: the
// check runs again later.
//
// release stops the watch and waits for a check in progress; call it when
// the request is over. It does not cancel the context, so what runs after
// the handler (the error handler) still sees whether the key ended it.
func (k Keys) Hold(r *http.Request, surface Surface, p access.Principal, ended func(cause error)) (held *http.Request, release func()) {
	ctx, cancel := context.WithCancelCause(r.Context())
	held = r.WithContext(context.WithValue(ctx, holdKey{}, ctx))
	// The checks read a copy of the headers: the handler may change its own.
	probe := r.WithContext(ctx)
	probe.Header = r.Header.Clone()
	w := &watch{}
	check := func() {
		defer w.running.Done()
		q, err := k.Authenticate(probe, surface)
		var cause error
		switch {
		case errors.Is(err, ErrInvalid), errors.Is(err, ErrMissing), err == nil && q.Anonymous():
			// (Anonymous: no key is configured any more, so none opens
			// the request: it is not the key that authenticates now.)
			cause = ErrKeyGone
		case err == nil && !samePrincipal(p, q):
			cause = ErrKeyChanged
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.stopped {
			return
		}
		if cause == nil {
			w.running.Add(1)
			w.timer.Reset(Recheck)
			return
		}
		w.stopped = true
		cancel(cause)
		if ended != nil {
			ended(cause)
		}
	}
	w.mu.Lock()
	w.running.Add(1)
	w.timer = time.AfterFunc(Recheck, check)
	w.mu.Unlock()
	return held, func() {
		w.mu.Lock()
		if !w.stopped {
			w.stopped = true
			if w.timer.Stop() {
				w.running.Done() // the armed check will not run
			}
		}
		w.mu.Unlock()
		w.running.Wait()
	}
}

type holdKey struct{}

// Follow returns ctx, ended as well, with the same cause, when the Hold of
// the request ctx comes from ends that request. It is for work that runs
// under a context detached from its request's cancellation but carrying its
// values (the MCP SDK runs tool calls so): without it such work would
// outlive the key. stop releases it; call it when the work is done. A ctx
// of no held request is returned as it is.
func Follow(ctx context.Context) (followed context.Context, stop func()) {
	held, ok := ctx.Value(holdKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	followed, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(held, func() {
		if cause := Ended(held); cause != nil {
			cancel(cause)
		}
	})
	return followed, func() { unhook(); cancel(nil) }
}

// watch is the state of one Hold. running counts the check that is armed or
// in progress (at most one).
type watch struct {
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	running sync.WaitGroup
}

// samePrincipal reports whether a and b are the same caller with the same
// rights.
func samePrincipal(a, b access.Principal) bool {
	return a.Actor() == b.Actor() && a.Role() == b.Role() && a.Anonymous() == b.Anonymous() &&
		a.Limited() == b.Limited() && slices.Equal(a.Sessions(), b.Sessions()) &&
		(a.Queues() == nil) == (b.Queues() == nil) && slices.Equal(a.Queues(), b.Queues())
}
