package supervisorapp

import (
	"testing"
	"time"

	"github.com/yukta/yukta/application/executionapp"
	"github.com/yukta/yukta/domain/supervisor"
)

// TestLimitNoticeGoesToItsSupervisor: a SupervisorLimitReached event
// belongs to no session; the supervisor it names receives it as an EVENT
// (with its data as written), every other supervisor nothing, whatever it
// owns.
func TestLimitNoticeGoesToItsSupervisor(t *testing.T) {
	sup := func(id string) supervisor.Supervisor {
		s, err := supervisor.Parse([]byte(`{"name":"x","engine":{"type":"http","settings":{}},"owns":["server"]}`), supervisor.ParseOptions{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	e := executionapp.StoredEvent{Seq: 7, Event: executionapp.Event{At: time.Now(), Type: EventSupervisorLimitReached, Actor: "engine",
		Data: map[string]any{"supervisorId": "busy", "limit": supervisor.LimitBudget}}}
	sig, ok, err := signalOf(t.Context(), nil, nil, nil, sup("busy"), e)
	if err != nil || !ok || sig.Kind() != supervisor.KindEvent || sig.Cursor() != EventCursor(e) {
		t.Fatalf("the named supervisor: %v %v %v", sig, ok, err)
	}
	if b, ok := sig.Body().(supervisor.EventSignal); !ok || b.Type != EventSupervisorLimitReached || b.Data["limit"] != supervisor.LimitBudget {
		t.Fatalf("the signal's body: %#v", sig.Body())
	}
	if _, ok, err := signalOf(t.Context(), nil, nil, nil, sup("other"), e); ok || err != nil {
		t.Fatalf("another supervisor of the whole server received it (%v)", err)
	}
}
