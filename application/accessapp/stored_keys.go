package accessapp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yukta/yukta/domain/access"
)

// RefreshInterval is how often every instance re-reads the stored keys
// even when it is told of no change: the bound on how long a change it
// missed (a notification lost while its listening connection was down)
// can go unseen.
const RefreshInterval = time.Second

// UsedResolution is how stale a key's lastUsedAt may get: its requests
// write it at most once a minute per instance, not on each of them.
const UsedResolution = time.Minute

// usageTimeout bounds one write of last uses, and the last one at stop.
const usageTimeout = 5 * time.Second

// KeySource reads every stored key, for the ring.
type KeySource interface {
	APIKeys(ctx context.Context) ([]access.APIKey, error)
}

// Usage is one key's last use, to be recorded.
type Usage struct {
	Hash access.TokenHash
	At   time.Time
	From string
}

// UsageWriter records last uses, each only if it is later than the stored
// one by UsedResolution and the key still has that secret.
type UsageWriter interface {
	MarkAPIKeysUsed(ctx context.Context, uses []Usage) error
}

// StoredKeys is this instance's in-memory copy of the stored keys: every
// request is authenticated against it (constant time, no query). Run keeps
// it fresh: a re-read on each change notification and every
// RefreshInterval, and the last uses written off the request path. A failed
// re-read keeps the last good copy.
type StoredKeys struct {
	src     KeySource
	used    UsageWriter
	changes <-chan struct{}
	now     func() time.Time
	onError func(error)

	ring atomic.Pointer[access.APIKeyRing]
	// refreshMu orders re-reads, so an older read never replaces a newer.
	refreshMu sync.Mutex

	mu      sync.Mutex
	pending map[access.TokenHash]Usage
	written map[access.TokenHash]time.Time
}

// NewStoredKeys returns the ring, empty until Refresh. changes delivers
// "the stored keys changed" hints (nil: none, the periodic re-read only);
// onError hears failed re-reads and writes.
func NewStoredKeys(src KeySource, used UsageWriter, changes <-chan struct{}, now func() time.Time, onError func(error)) *StoredKeys {
	s := &StoredKeys{src: src, used: used, changes: changes, now: now, onError: onError,
		pending: map[access.TokenHash]Usage{}, written: map[access.TokenHash]time.Time{}}
	s.ring.Store(access.NewAPIKeyRing(nil))
	return s
}

// Refresh re-reads the stored keys and swaps them in.
func (s *StoredKeys) Refresh(ctx context.Context) error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	keys, err := s.src.APIKeys(ctx)
	if err != nil {
		return err
	}
	s.ring.Store(access.NewAPIKeyRing(keys))
	return nil
}

// Len is the number of stored keys, expired ones included: while there is
// one, the server is not open.
func (s *StoredKeys) Len() int { return s.ring.Load().Len() }

// Authenticate returns the principal of the stored key whose secret was
// presented, if it has not expired. from is the request's source address,
// recorded (at most once a minute per key) as the key's last use.
func (s *StoredKeys) Authenticate(presented, from string) (access.Principal, bool) {
	now := s.now()
	k, ok := s.ring.Load().Authenticate(presented, now)
	if !ok {
		return access.Principal{}, false
	}
	s.mu.Lock()
	last := s.written[k.Hash()]
	if k.LastUsedAt().After(last) {
		last = k.LastUsedAt()
	}
	if now.Sub(last) >= UsedResolution {
		s.written[k.Hash()] = now
		s.pending[k.Hash()] = Usage{Hash: k.Hash(), At: now.UTC(), From: from}
	}
	s.mu.Unlock()
	return k.Principal(), true
}

// Run keeps the ring fresh until ctx ends, then writes the last uses still
// pending and returns.
func (s *StoredKeys) Run(ctx context.Context) {
	t := time.NewTicker(RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.flush(context.WithoutCancel(ctx))
			return
		case <-s.changes:
		case <-t.C:
		}
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.onError(err)
		}
		s.flush(ctx)
	}
}

// flush writes the pending last uses.
func (s *StoredKeys) flush(ctx context.Context) {
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return
	}
	uses := make([]Usage, 0, len(s.pending))
	for _, u := range s.pending {
		uses = append(uses, u)
	}
	clear(s.pending)
	// Forget the keys no longer presented, so the map stays as small as
	// the keys in use.
	for h, at := range s.written {
		if s.now().Sub(at) > 2*UsedResolution {
			delete(s.written, h)
		}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, usageTimeout)
	defer cancel()
	if err := s.used.MarkAPIKeysUsed(ctx, uses); err != nil && ctx.Err() == nil {
		s.onError(err)
	}
}
