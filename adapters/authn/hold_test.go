package authn

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/access"
)

// holdUntil waits (up to a bound far above Recheck) for ctx to end and
// returns its Ended cause.
func holdUntil(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return Ended(ctx)
	case <-time.After(20 * Recheck):
		t.Fatalf("the held request is still open %s after its key changed", 20*Recheck)
		return nil
	}
}

func heldRequest(t *testing.T, keys Keys, surface Surface, secret string) (context.Context, func(), chan error) {
	t.Helper()
	r := httptest.NewRequest("GET", "/api/events", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	p, err := keys.Authenticate(r, surface)
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan error, 2)
	held, release := keys.Hold(r, surface, p, func(cause error) { heard <- cause })
	t.Cleanup(release)
	return held.Context(), release, heard
}

func TestHoldEndsTheRequestWhenItsKeyIsRemoved(t *testing.T) {
	api := NewRing(ring(t, "ci", access.Operator, apiSecret))
	keys := Keys{API: api}
	ctx, _, heard := heldRequest(t, keys, REST, apiSecret)
	time.Sleep(3 * Recheck) // checks that pass keep it open
	if ctx.Err() != nil {
		t.Fatalf("ended while its key is valid: %v", context.Cause(ctx))
	}
	api.Replace(ring(t, "other", access.Operator, mcpSecret))
	at := time.Now()
	if cause := holdUntil(t, ctx); !errors.Is(cause, ErrKeyGone) {
		t.Fatalf("cause %v, want ErrKeyGone", cause)
	}
	t.Logf("ended %d ms after the key was removed", time.Since(at).Milliseconds())
	if cause := <-heard; !errors.Is(cause, ErrKeyGone) {
		t.Fatalf("heard %v", cause)
	}
}

func TestHoldEndsTheRequestWhenItsKeyNarrows(t *testing.T) {
	api := NewRing(ring(t, "ci", access.Admin, apiSecret))
	ctx, _, _ := heldRequest(t, Keys{API: api}, MCP, apiSecret)
	spec, err := access.NewKeySpec("ci", access.Admin, []string{"etl"}, apiSecret) // same secret, now limited
	if err != nil {
		t.Fatal(err)
	}
	narrowed, err := access.NewKeyring([]access.KeySpec{spec})
	if err != nil {
		t.Fatal(err)
	}
	api.Replace(narrowed)
	if cause := holdUntil(t, ctx); !errors.Is(cause, ErrKeyChanged) {
		t.Fatalf("cause %v, want ErrKeyChanged", cause)
	}
}

// A WORKER key whose queue list narrows (a key file edit) ends the
// requests it holds open, a long poll among them.
func TestHoldEndsTheRequestWhenItsQueuesNarrow(t *testing.T) {
	wide, err := access.ParseKeyFile([]byte("w WORKER queues=gpu,build " + apiSecret))
	if err != nil {
		t.Fatal(err)
	}
	k, err := access.NewKeyring(wide)
	if err != nil {
		t.Fatal(err)
	}
	api := NewRing(k)
	ctx, _, _ := heldRequest(t, Keys{API: api}, REST, apiSecret)
	narrow, err := access.ParseKeyFile([]byte("w WORKER queues=gpu " + apiSecret))
	if err != nil {
		t.Fatal(err)
	}
	k, err = access.NewKeyring(narrow)
	if err != nil {
		t.Fatal(err)
	}
	api.Replace(k)
	if cause := holdUntil(t, ctx); !errors.Is(cause, ErrKeyChanged) {
		t.Fatalf("cause %v, want ErrKeyChanged", cause)
	}
}

// A key moved to another line (the same name, role and secret) keeps its
// requests; release stops the checks, and the context stays as it was.
func TestHoldKeepsAnUnchangedKeyAndStopsOnRelease(t *testing.T) {
	api := NewRing(ring(t, "ci", access.Viewer, apiSecret))
	ctx, release, heard := heldRequest(t, Keys{API: api}, REST, apiSecret)
	api.Replace(ring(t, "ci", access.Viewer, apiSecret))
	time.Sleep(3 * Recheck)
	release()
	release() // twice is harmless
	api.Replace(nil)
	time.Sleep(3 * Recheck)
	if ctx.Err() != nil || len(heard) != 0 {
		t.Fatalf("a released hold ended its request: %v", context.Cause(ctx))
	}
}

func TestEndedIsNilForOtherEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if Ended(ctx) != nil {
		t.Fatal("an open context ended")
	}
	cancel()
	if Ended(ctx) != nil {
		t.Fatal("a client that left reads as a key that ended")
	}
}

func TestRingReplace(t *testing.T) {
	var none *Ring
	if none.Len() != 0 {
		t.Fatal("a nil ring has keys")
	}
	if _, ok := none.Authenticate(apiSecret); ok {
		t.Fatal("a nil ring authenticates")
	}
	r := NewRing(ring(t, "ci", access.Viewer, apiSecret))
	if p, ok := r.Authenticate(apiSecret); !ok || p.Actor() != "key:ci" {
		t.Fatal("the ring does not authenticate its key")
	}
	r.Replace(ring(t, "cd", access.Viewer, mcpSecret))
	if _, ok := r.Authenticate(apiSecret); ok {
		t.Fatal("a replaced key still authenticates")
	}
	if p, ok := r.Authenticate(mcpSecret); !ok || p.Actor() != "key:cd" {
		t.Fatal("the new key does not authenticate")
	}
}

// Work detached from its request's cancellation (as the MCP SDK runs tool
// calls) still ends when the Hold ends the request, and only then.
func TestFollowEndsDetachedWork(t *testing.T) {
	api := NewRing(ring(t, "ci", access.Admin, apiSecret))
	held, _, _ := heldRequest(t, Keys{API: api}, MCP, apiSecret)
	work, stop := Follow(context.WithoutCancel(held))
	defer stop()
	api.Replace(ring(t, "cd", access.Admin, mcpSecret))
	if cause := holdUntil(t, work); !errors.Is(cause, ErrKeyGone) {
		t.Fatalf("cause %v, want ErrKeyGone", cause)
	}

	plain, stopPlain := Follow(context.Background())
	stopPlain()
	if plain.Err() != nil {
		t.Fatal("a context of no held request was ended")
	}
	// A request that ends for another reason does not end detached work.
	parent, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(parent, "GET", "/mcp", nil)
	r.Header.Set("X-API-Key", mcpSecret)
	keys := Keys{API: NewRing(ring(t, "cd", access.Admin, mcpSecret))}
	p, _ := keys.Authenticate(r, MCP)
	h, release := keys.Hold(r, MCP, p, nil)
	defer release()
	detached, stopDetached := Follow(context.WithoutCancel(h.Context()))
	defer stopDetached()
	cancel()
	time.Sleep(2 * Recheck)
	if detached.Err() != nil {
		t.Fatal("a request its client left ended detached work as if its key had gone")
	}
}

// BenchmarkHoldShortRequest is what the watch costs a request that ends
// before its first re-check: a timer, a context and a copy of the headers.
func BenchmarkHoldShortRequest(b *testing.B) {
	spec, _ := access.NewKeySpec("ci", access.Admin, nil, apiSecret)
	kr, _ := access.NewKeyring([]access.KeySpec{spec})
	keys := Keys{API: NewRing(kr)}
	r := httptest.NewRequest("GET", "/api/sessions", nil)
	r.Header.Set("Authorization", "Bearer "+apiSecret)
	p, _ := keys.Authenticate(r, REST)
	b.ReportAllocs()
	for b.Loop() {
		_, release := keys.Hold(r, REST, p, nil)
		release()
	}
}

// BenchmarkRecheck is one re-check: what an open request costs every
// Recheck.
func BenchmarkRecheck(b *testing.B) {
	spec, _ := access.NewKeySpec("ci", access.Admin, nil, apiSecret)
	kr, _ := access.NewKeyring([]access.KeySpec{spec})
	keys := Keys{API: NewRing(kr)}
	r := httptest.NewRequest("GET", "/api/events", nil)
	r.Header.Set("Authorization", "Bearer "+apiSecret)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = keys.Authenticate(r, REST)
	}
}
