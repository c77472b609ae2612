package processengine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/engines/processengine"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestRuntimeHandsAProgramItsDelegation: through the runtime, a parent run
// by the process engine (owning another session than its child) gets the
// child's ESCALATE as a DELEGATED line, and its delegationAnswer line
// answers the delegation under the engine's lease.
func TestRuntimeHandsAProgramItsDelegation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.put(t, "boss", `{"name":"Boss","engine":{"type":"process","settings":{"command":"/opt/yukta/decide"}},"owns":["session:ops"]}`)
	e.put(t, "child", `{"name":"Child","engine":{"type":"http"},"owns":["session:ci"],"parentId":"boss"}`)
	st := postgres.NewSupervisorRuntime(e.pool)
	deps := supervisorapp.DelegationDeps{Store: st, Supervisors: e.store}
	sp := newFakeSpawner()
	runEngine(t, e, processengine.Deps{
		Spawner: sp, Policy: procPolicy(t, "/opt/yukta/decide"), Delegate: supervisorapp.NewDelegate(deps),
		AnswerDelegation: supervisorapp.NewAnswerDelegation(deps),
		OnError:          func(id string, err error) { t.Logf("process engine %s: %v", id, err) }})

	p := sp.next(t)
	if got := p.input(t); !strings.Contains(got, `"kind":"STARTED"`) {
		t.Fatalf("first line %s, want STARTED", got)
	}
	d, _, err := supervisorapp.NewDelegate(deps).Handle(t.Context(), supervisorapp.DelegateInput{SupervisorID: "child", Kind: supervisor.Escalate,
		Key: "k", Payload: json.RawMessage(`{"question":"retry?"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var line struct {
		Kind   string
		Signal struct {
			DelegationID, From string
			Request            map[string]any
		}
	}
	for line.Kind != "DELEGATED" {
		if err := json.Unmarshal([]byte(p.input(t)), &line); err != nil {
			t.Fatal(err)
		}
	}
	if line.Signal.DelegationID != d.ID() || line.Signal.From != "child" || line.Signal.Request["question"] != "retry?" {
		t.Fatalf("DELEGATED line %+v", line)
	}
	p.sayText(t, `{"type":"delegationAnswer","answers":"`+d.ID()+`","answer":{"retry":true}}`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _, err := st.Delegation(t.Context(), d.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got.Status() == supervisor.DelegationAnswered {
			if string(got.Answer()) != `{"retry": true}` {
				t.Fatalf("answer %s", got.Answer())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delegation is still %s", got.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
