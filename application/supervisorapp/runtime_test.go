package supervisorapp

import (
	"slices"
	"testing"

	"github.com/yukta/yukta/domain/supervisor"
)

// TestRuntimeHandsAnEngineOnlyWhatItsSupervisorHears: the runtime, not
// each engine, keeps back what a supervisor does not hear
// (supervisor.Hears): the events its own directives caused, from every
// engine that decides inside the server; the http engine, whose system
// reads the agent API's feed, gets them. Either way the cursor moves past
// them.
func TestRuntimeHandsAnEngineOnlyWhatItsSupervisorHears(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		engine, settings string
		want             []string
	}{
		{"rules", `{"rules":[{"id":"a","when":{"event":"NodeStatusChanged"},"then":{"command":"PauseWorkflow"}}]}`, []string{"1", "3"}},
		{"process", `{"command":"/bin/true"}`, []string{"1", "3"}},
		{"workflow", `{"sessionId":"supervisors","workflowId":"triage","events":["NodeStatusChanged"]}`, []string{"1", "3"}},
		{"http", `{}`, []string{"1", "2", "3"}},
	} {
		t.Run(c.engine, func(t *testing.T) {
			t.Parallel()
			sup, err := supervisor.Parse([]byte(`{"name":"Guard","engine":{"type":"`+c.engine+`","settings":`+c.settings+`},"owns":["session:ci"]}`),
				supervisor.ParseOptions{ID: "guard"})
			if err != nil {
				t.Fatal(err)
			}
			o := &outbox{}
			for _, actor := range []string{"engine", Actor("guard"), Actor("other")} {
				o.add("r1", "a", "FAILURE")
				o.evs[len(o.evs)-1].Actor = actor
			}
			cursors := &memCursors{}
			rt := NewRuntime(RuntimeDeps{Events: o, Cursors: cursors, Redactor: asIs{}}, RuntimeConfig{})
			eng := &batchRecorder{}
			var cur Cursor
			if n, err := rt.pump(t.Context(), sup, Fence{}, eng, &cur); err != nil || n != 3 {
				t.Fatalf("pump: %d events, %v", n, err)
			}
			handed := slices.DeleteFunc(slices.Clone(eng.log), func(s string) bool { return s == "end" || s[0] == 'b' })
			if !slices.Equal(handed, c.want) {
				t.Errorf("signals handed: got %v, want %v", handed, c.want)
			}
			if want := EventPosition(o.evs[2]); cur.Pos != want || len(cursors.saved) != 1 {
				t.Errorf("cursor: got %+v after %d saves, want %+v after 1: past the signals not heard too", cur.Pos, len(cursors.saved), want)
			}
		})
	}
}
