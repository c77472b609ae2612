package processengine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/engines/processengine"
	"github.com/yukta/yukta/application/supervisorapp"
)

// TestRuntimeClosesTheProcessEngine: the runtime closes an engine that
// holds a program (EngineCloser) when its run ends, and waits for it: when
// the supervisor changes, the old program is stopped before the new one
// starts, and when the runtime stops, Run returns only after the program
// has. The program's Stop takes 200ms, so a runtime that did not wait
// would be seen returning early.
func TestRuntimeClosesTheProcessEngine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put(t, "proc", `{"name":"P","engine":{"type":"process","settings":{"command":"/opt/yukta/decide"}},"owns":["session:ci"]}`)
	sp := newFakeSpawner()
	sp.stopDelay = 200 * time.Millisecond
	st := postgres.NewSupervisorRuntime(e.pool)
	rt := supervisorapp.NewRuntime(supervisorapp.RuntimeDeps{Supervisors: e.store, Leases: st, Cursors: st, Events: postgres.NewReader(e.pool), Positions: postgres.NewReader(e.pool),
		Runs: st, Holds: st, Owner: "test",
		Engines: map[string]supervisorapp.EngineFactory{"process": processengine.NewFactory(processengine.Deps{
			Spawner: sp, Policy: procPolicy(t, "/opt/yukta/decide")})},
		OnError: func(id string, err error) { t.Logf("runtime, supervisor %s: %v", id, err) },
	}, supervisorapp.RuntimeConfig{LeaseTTL: time.Second, Poll: 20 * time.Millisecond, Rescan: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); rt.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	first := sp.next(t)
	// The STARTED signal reached the program.
	if got := first.input(t); !strings.Contains(got, `"kind":"STARTED"`) {
		t.Errorf("first line %s, want STARTED", got)
	}
	e.put(t, "proc", `{"name":"P2","engine":{"type":"process","settings":{"command":"/opt/yukta/decide"}},"owns":["session:ci"]}`)
	second := sp.next(t)
	select {
	case <-first.stopped:
	default:
		t.Error("the changed supervisor's new program started before the old one was stopped")
	}
	cancel()
	<-done
	select {
	case <-second.stopped:
	default:
		t.Error("Run returned before the engine's program was stopped")
	}
}
