package supervisor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

func exists(ids ...string) func(string) bool {
	return func(id string) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	}
}

func TestNewDelegationEscalateGoesToTheParent(t *testing.T) {
	d, err := NewDelegation(DelegationSpec{ID: "d1", Kind: Escalate, From: "child", FromParent: "boss", Key: "k",
		Payload: json.RawMessage(`{"x":1}`), Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if d.To() != "boss" || d.Status() != DelegationOpen || !d.Deadline().Equal(t0.Add(DefaultDelegationTTL)) {
		t.Fatalf("delegation = %+v", d.Record())
	}
	if d.Kind().SignalKind() != KindDelegated || Consult.SignalKind() != KindConsulted {
		t.Fatal("signal kinds")
	}
}

func TestNewDelegationRefusals(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("a", MaxDelegationBytes) + `"`)
	cases := []struct {
		name string
		spec DelegationSpec
		path string
	}{
		{"escalate without parent", DelegationSpec{Kind: Escalate, From: "a", Key: "k", Payload: json.RawMessage(`1`)}, "kind"},
		{"escalate elsewhere", DelegationSpec{Kind: Escalate, From: "a", FromParent: "p", To: "q", Key: "k", Payload: json.RawMessage(`1`)}, "to"},
		{"consult nobody", DelegationSpec{Kind: Consult, From: "a", Key: "k", Payload: json.RawMessage(`1`)}, "to"},
		{"consult self", DelegationSpec{Kind: Consult, From: "a", To: "a", Exists: exists("a"), Key: "k", Payload: json.RawMessage(`1`)}, "to"},
		{"consult unknown", DelegationSpec{Kind: Consult, From: "a", To: "b", Exists: exists("a"), Key: "k", Payload: json.RawMessage(`1`)}, "to"},
		{"bad kind", DelegationSpec{Kind: "ASK", From: "a", Key: "k", Payload: json.RawMessage(`1`)}, "kind"},
		{"no key", DelegationSpec{Kind: Consult, From: "a", To: "b", Exists: exists("b"), Payload: json.RawMessage(`1`)}, "key"},
		{"no payload", DelegationSpec{Kind: Consult, From: "a", To: "b", Exists: exists("b"), Key: "k"}, "payload"},
		{"bad payload", DelegationSpec{Kind: Consult, From: "a", To: "b", Exists: exists("b"), Key: "k", Payload: json.RawMessage(`{`)}, "payload"},
		{"big payload", DelegationSpec{Kind: Consult, From: "a", To: "b", Exists: exists("b"), Key: "k", Payload: big}, "payload"},
	}
	for _, c := range cases {
		_, err := NewDelegation(c.spec)
		var ve *fault.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("%s: err = %v", c.name, err)
		}
		found := false
		for _, v := range ve.Violations {
			found = found || v.Path == c.path
		}
		if !found {
			t.Fatalf("%s: violations %+v lack %s", c.name, ve.Violations, c.path)
		}
	}
}

func TestDelegationAnswersOnce(t *testing.T) {
	d, err := NewDelegation(DelegationSpec{ID: "d1", Kind: Consult, From: "a", To: "b", Exists: exists("b"), Key: "k",
		Payload: json.RawMessage(`"?"`), Now: t0, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Respond("c", json.RawMessage(`1`), t0); !errors.Is(err, ErrDelegationNotFound) || err.Error() != DelegationNotFound(d.ID()).Error() {
		t.Fatalf("an answer from a supervisor it was not sent to: %v, want the words of an unknown id: %v", err, DelegationNotFound(d.ID()))
	}
	if err := d.Respond("b", json.RawMessage(`{`), t0); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("bad answer = %v", err)
	}
	if err := d.Respond("b", json.RawMessage(`{"ok":true}`), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if d.Status() != DelegationAnswered || string(d.Answer()) != `{"ok":true}` || !d.AnsweredAt().Equal(t0.Add(time.Second)) {
		t.Fatalf("after answer: %+v", d.Record())
	}
	if err := d.Respond("b", json.RawMessage(`2`), t0); !errors.Is(err, ErrDelegationSettled) || !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("second answer = %v", err)
	}
	if err := d.Expire(t0.Add(time.Hour)); !errors.Is(err, ErrDelegationSettled) {
		t.Fatalf("expire answered = %v", err)
	}
}

func TestDelegationExpires(t *testing.T) {
	d, _ := NewDelegation(DelegationSpec{ID: "d1", Kind: Escalate, From: "a", FromParent: "p", Key: "k", Payload: json.RawMessage(`1`), Now: t0, TTL: time.Minute})
	if err := d.Expire(t0); !errors.Is(err, ErrDelegationSettled) {
		t.Fatalf("early expire = %v", err)
	}
	if err := d.Respond("p", json.RawMessage(`1`), t0.Add(time.Minute)); !errors.Is(err, ErrDelegationSettled) {
		t.Fatalf("late answer = %v", err)
	}
	if err := d.Expire(t0.Add(time.Minute)); err != nil || d.Status() != DelegationExpired {
		t.Fatalf("expire = %v, %s", err, d.Status())
	}
	if DelegationExpired.CanMove(DelegationAnswered) || DelegationAnswered.CanMove(DelegationExpired) {
		t.Fatal("settled delegations move")
	}
}

func TestDelegationAnswerSignals(t *testing.T) {
	b, err := json.Marshal(NewSignal("7", DelegatedSignal{DelegationID: "d1", From: "a", Request: 1, To: "p", Answered: true, Answer: "yes"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cursor":"7","kind":"DELEGATED","signal":{"delegationId":"d1","from":"a","kind":"ESCALATE","request":1,"to":"p","answer":"yes"}}`
	if string(b) != want {
		t.Fatalf("got %s", b)
	}
}
