package httpapi

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/supervisor"
)

const (
	aliceKey = "alice-secret-0123456789abcdefgh"
	bobKey   = "bob-secret-0123456789abcdefghij"
)

// budgetServer is a keyed server with two ADMIN keys, and extra more, and
// the default failure budget (20 a minute). Every key makes each check a
// little slower, so concurrent checks overlap.
func budgetServer(t *testing.T, extra int) *Server {
	t.Helper()
	var specs []access.KeySpec
	keys := map[string]string{"alice": aliceKey, "bob": bobKey}
	for i := range extra {
		keys[fmt.Sprintf("k%d", i)] = fmt.Sprintf("extra-%06d-0123456789abcdefgh", i)
	}
	for name, secret := range keys {
		s, err := access.NewKeySpec(name, access.Viewer, nil, secret)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, s)
	}
	ring, err := access.NewKeyring(specs)
	if err != nil {
		t.Fatal(err)
	}
	srv, _, _ := strictServer(t, Config{Security: Security{Keys: authn.Keys{API: authn.NewRing(ring)}}})
	return srv
}

// read is one authenticated read from src with key.
func read(srv *Server, src, key string) int {
	status, _ := hit(srv.Handler(), "GET", "/api/sessions/s1/executions/0192f0c4-8c5e-7b7a-9f3e-2d4c5b6a7e8f", "", src, "X-API-Key", key)
	return status
}

func wrong(i int) string { return fmt.Sprintf("wrong-key-%03d-0123456789abcdefgh", i) }

// TestGuesserBehindANATLocksOutNobodyWhoWorks: a guesser spends its
// address's budget of 20 different wrong keys; after that its guesses are
// not checked, so even a right one gets 429, while a key that already worked
// from that address keeps working, and other addresses are not affected.
func TestGuesserBehindANATLocksOutNobodyWhoWorks(t *testing.T) {
	srv := budgetServer(t, 0)
	const nat, elsewhere = "198.51.100.7", "203.0.113.9"
	if s := read(srv, nat, aliceKey); s != 200 {
		t.Fatalf("alice before the guessing: %d", s)
	}
	for i := 1; i <= 20; i++ {
		if s := read(srv, nat, wrong(i)); s != 401 {
			t.Fatalf("guess %d of 20: %d, want 401", i, s)
		}
	}
	for i := 21; i <= 40; i++ {
		if s := read(srv, nat, wrong(i)); s != 429 {
			t.Fatalf("guess %d, past the budget: %d, want 429", i, s)
		}
	}
	// Brute force: bob's key is right, but as a new key from a spent
	// address it is a guess beyond the budget, so it is not checked.
	if s := read(srv, nat, bobKey); s != 429 {
		t.Fatalf("a right key guessed past the budget: %d, want 429 (guesses beyond the budget must not succeed)", s)
	}
	// No lockout: alice, who worked from this address, still does, again
	// and again; her requests do not refill the guesser's budget.
	for i := range 5 {
		if s := read(srv, nat, aliceKey); s != 200 {
			t.Fatalf("alice from the guesser's address, request %d: %d, want 200", i+1, s)
		}
	}
	if s := read(srv, nat, wrong(41)); s != 429 {
		t.Fatalf("a guess after alice's requests: %d, want 429 still", s)
	}
	if s := read(srv, elsewhere, bobKey); s != 200 {
		t.Fatalf("bob from another address: %d, want 200", s)
	}
	// What bob did elsewhere does not exempt his key here: that would let
	// a guess here succeed.
	if s := read(srv, nat, bobKey); s != 429 {
		t.Fatalf("bob from the guesser's address, having worked only elsewhere: %d, want 429", s)
	}
}

// TestAStaleKeyLocksOutOnlyItself: one wrong key sent again and again (a job
// with an old key) is refused on its own after 20 tries; it is one guess,
// so the address keeps its budget and new keys from it are still checked.
func TestAStaleKeyLocksOutOnlyItself(t *testing.T) {
	srv := budgetServer(t, 0)
	const nat = "198.51.100.8"
	for i := 1; i <= 20; i++ {
		if s := read(srv, nat, wrong(0)); s != 401 {
			t.Fatalf("stale key, try %d: %d, want 401", i, s)
		}
	}
	for i := 21; i <= 60; i++ {
		if s := read(srv, nat, wrong(0)); s != 429 {
			t.Fatalf("stale key, try %d: %d, want 429", i, s)
		}
	}
	if s := read(srv, nat, bobKey); s != 200 {
		t.Fatalf("a valid key first used from the stale key's address: %d, want 200", s)
	}
	// The stale key spent one token: 19 other guesses are still checked,
	// the 20th different wrong key is the last.
	for i := 1; i <= 19; i++ {
		if s := read(srv, nat, wrong(i)); s != 401 {
			t.Fatalf("guess %d after the stale key: %d, want 401", i, s)
		}
	}
	if s := read(srv, nat, wrong(20)); s != 429 {
		t.Fatalf("guess 20 after the stale key: %d, want 429", s)
	}
}

// TestConcurrentGuessesShareNoToken: 200 different wrong keys sent at once
// from one address are checked exactly 20 times, however long each check
// takes (20,000 keys make one take a few hundred microseconds).
func TestConcurrentGuessesShareNoToken(t *testing.T) {
	srv := budgetServer(t, 20_000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := map[int]int{}
	start := make(chan struct{})
	for i := range 200 {
		wg.Go(func() {
			<-start
			s := read(srv, "198.51.100.9", wrong(i))
			mu.Lock()
			count[s]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	if count[401] != 20 || count[429] != 180 {
		t.Fatalf("200 concurrent guesses: %v, want exactly 20 checked (401) and 180 refused unchecked (429)", count)
	}
}

// slowSups is the supervisor store of TestABurstOfOneCredentialIsOneGuess.
type slowSups struct{}

func (slowSups) Supervisor(context.Context, string) (supervisorapp.Summary, error) {
	return supervisorapp.Summary{Supervisor: supervisor.Restore(supervisor.Spec{ID: "agent", Name: "Agent", EngineType: "http",
		Owns: []string{"session:ci"}, Enabled: true})}, nil
}
func (slowSups) Supervisors(context.Context) ([]supervisorapp.Summary, error) { return nil, nil }

type noSignals struct{}

func (noSignals) Handle(context.Context, supervisorapp.SignalsInput) (supervisorapp.SignalPage, error) {
	return supervisorapp.SignalPage{}, nil
}

// TestABurstOfOneCredentialIsOneGuess: 200 concurrent requests with one
// valid credential, before it was ever proven from their address (a fresh
// server, or one just restarted), are one guess: all are served, none gets
// 429, even though checking a credential takes a while (a database read).
func TestABurstOfOneCredentialIsOneGuess(t *testing.T) {
	auth := func(ctx context.Context, secret, _ string) (access.Principal, error) {
		time.Sleep(30 * time.Millisecond)
		if secret != "yks_valid" {
			return access.Principal{}, supervisorapp.ErrAgentUnauthenticated
		}
		return access.SupervisorPrincipal("agent"), nil
	}
	srv, err := New(Config{Addr: "127.0.0.1:0", Security: Security{Agent: auth}},
		UseCases{Agent: AgentUseCases{Caller: supervisorapp.NewAgentCaller(slowSups{}), Self: supervisorapp.NewReadAgentSelf(slowSups{}), Signals: noSignals{}}}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	count := map[int]int{}
	start := make(chan struct{})
	for range 200 {
		wg.Go(func() {
			<-start
			s, _ := hit(srv.Handler(), "GET", "/api/agent/v1/self", "", "198.51.100.10", "Authorization", "Bearer yks_valid")
			mu.Lock()
			count[s]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	if count[200] != 200 {
		t.Fatalf("200 concurrent requests with one valid credential: %v, want 200 served", count)
	}
}

// TestProvenKeysAreForgotten: the exemption lasts a day after a key's last
// success, and a full table only withholds it.
func TestProvenKeysAreForgotten(t *testing.T) {
	r := newRecent(time.Hour)
	r.capacity = 2
	t0 := time.Unix(1000, 0)
	r.add("a", t0)
	r.add("b", t0)
	r.add("c", t0) // full: not remembered
	if !r.has("a", t0.Add(59*time.Minute)) || r.has("a", t0.Add(time.Hour)) || r.has("c", t0) {
		t.Fatal("recent keeps keys for its period, and none past its capacity")
	}
	r.add("c", t0.Add(2*time.Hour)) // a sweep frees room
	if !r.has("c", t0.Add(2*time.Hour)) || len(r.m) != 1 {
		t.Fatalf("after the sweep: %v", r.m)
	}
}
