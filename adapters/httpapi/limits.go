package httpapi

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Rate is N requests per Per; the zero Rate is unlimited. N is also the
// burst, so a quiet client may send N at once.
type Rate struct {
	N   int
	Per time.Duration
}

// Unlimited reports whether r limits nothing.
func (r Rate) Unlimited() bool { return r.N <= 0 || r.Per <= 0 }

// limiters keeps one token bucket per key (a source address or an actor).
// It is bounded: idle buckets that have refilled are dropped, so a flood of
// source addresses cannot grow it without end.
type limiters struct {
	rate Rate
	// capacity overrides maxBuckets (tests).
	capacity int
	mu       sync.Mutex
	m        map[string]*bucket
	// swept is when idle buckets were last dropped.
	swept time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// maxBuckets bounds memory. When that many keys are busy at once (a flood
// from many addresses), a new key is refused until a sweep frees room:
// failing closed keeps both memory and the cost of sweeping bounded.
const maxBuckets = 100_000

func newLimiters(r Rate) *limiters {
	return &limiters{rate: r, m: map[string]*bucket{}}
}

// get returns key's bucket, or nil when the table is full.
func (l *limiters) get(key string, now time.Time) *rate.Limiter {
	b, ok := l.m[key]
	if !ok {
		full := len(l.m) >= l.max()
		if full && now.Sub(l.swept) >= time.Second || !full && now.Sub(l.swept) > l.rate.Per {
			l.sweep(now)
		}
		if len(l.m) >= l.max() {
			return nil
		}
		b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(l.rate.N)/l.rate.Per.Seconds()), l.rate.N)}
		l.m[key] = b
	}
	b.seen = now
	return b.lim
}

func (l *limiters) max() int {
	if l.capacity > 0 {
		return l.capacity
	}
	return maxBuckets
}

// sweep drops buckets idle for a whole period: they are full again, so a
// fresh bucket behaves the same.
func (l *limiters) sweep(now time.Time) {
	for k, b := range l.m {
		if now.Sub(b.seen) >= l.rate.Per {
			delete(l.m, k)
		}
	}
	l.swept = now
}

// take spends one token of key's bucket. When none is left it spends
// nothing and returns how long until one is.
func (l *limiters) take(key string, now time.Time) (bool, time.Duration) {
	if l == nil || l.rate.Unlimited() {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.get(key, now)
	if lim == nil {
		return false, time.Second
	}
	if lim.AllowN(now, 1) {
		return true, 0
	}
	return false, waitFor(lim, now)
}

// reserve is take with a way back: when a token is there it is spent at
// once, so concurrent callers cannot share it, and undo gives it back.
func (l *limiters) reserve(key string, now time.Time) (ok bool, wait time.Duration, undo func()) {
	if l == nil || l.rate.Unlimited() {
		return true, 0, func() {}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.get(key, now)
	if lim == nil {
		return false, time.Second, nil
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); !r.OK() || d > 0 {
		r.CancelAt(now)
		return false, d, nil
	}
	return true, 0, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		r.CancelAt(now)
	}
}

// spent reports, without spending, whether key's bucket is empty, and how
// long until a token returns.
func (l *limiters) spent(key string, now time.Time) (bool, time.Duration) {
	if l == nil || l.rate.Unlimited() {
		return false, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.m[key]
	if !ok || b.lim.TokensAt(now) >= 1 {
		return false, 0
	}
	return true, waitFor(b.lim, now)
}

// has reports whether key has a bucket, that is whether it spent a token
// within the last period.
func (l *limiters) has(key string) bool {
	if l == nil || l.rate.Unlimited() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.m[key]
	return ok
}

func waitFor(lim *rate.Limiter, now time.Time) time.Duration {
	missing := 1 - lim.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	return time.Duration(missing / float64(lim.Limit()) * float64(time.Second))
}

// retryAfter is the Retry-After value for a wait: whole seconds, at least 1.
func retryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// recent remembers keys seen within a period (the keys that authenticated
// from a source), bounded like limiters: when full, a new key is not
// remembered, which only withholds the exemption it would earn.
type recent struct {
	keep     time.Duration
	capacity int // overrides maxBuckets (tests)
	mu       sync.Mutex
	m        map[string]time.Time
	swept    time.Time
}

func newRecent(keep time.Duration) *recent {
	return &recent{keep: keep, m: map[string]time.Time{}}
}

// add remembers key as seen at now.
func (r *recent) add(key string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[key]; !ok {
		max := r.capacity
		if max <= 0 {
			max = maxBuckets
		}
		if len(r.m) >= max && now.Sub(r.swept) >= time.Second {
			for k, seen := range r.m {
				if now.Sub(seen) >= r.keep {
					delete(r.m, k)
				}
			}
			r.swept = now
		}
		if len(r.m) >= max {
			return
		}
	}
	r.m[key] = now
}

// has reports whether key was seen within the period before now.
func (r *recent) has(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen, ok := r.m[key]
	return ok && now.Sub(seen) < r.keep
}

// checking counts the requests whose presented key is being checked now,
// by source and key: concurrent requests with one key are one guess, so
// only the first reserves a token of the failure budget (a valid key's
// burst on a fresh server must not spend the budget meant for guesses).
type checking struct {
	mu sync.Mutex
	n  map[string]int
}

func newChecking() *checking { return &checking{n: map[string]int{}} }

// join counts a request in; first is true when no other request with the
// same pair was being checked.
func (c *checking) join(pair string) (first bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[pair]++
	return c.n[pair] == 1
}

// leave counts it out.
func (c *checking) leave(pair string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[pair]--; c.n[pair] <= 0 {
		delete(c.n, pair)
	}
}
