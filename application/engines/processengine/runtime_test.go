package processengine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/application/engines/processengine"
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
	stop := runEngine(t, e, processengine.Deps{
		Spawner: sp, Policy: procPolicy(t, "/opt/yukta/decide")})

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
	stop()
	select {
	case <-second.stopped:
	default:
		t.Error("Run returned before the engine's program was stopped")
	}
}
