package journalapp

import (
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
)

func TestBodyKinds(t *testing.T) {
	at := time.Date(2026, 11, 29, 1, 2, 3, 4, time.UTC)
	e := SourceEvent{Position: Position{XID: 9, Seq: 42}, At: at, SessionID: "s", ExecutionID: "e", Actor: "key:ops", Channel: "cli"}

	e.Type, e.NodeID, e.Data = "NodeStatusChanged", "n1", map[string]any{"from": "PENDING", "to": "RUNNING"}
	kind, b := Body(e)
	if kind != journal.KindEvent || b["seq"] != int64(42) || b["nodeId"] != "n1" || b["at"] != "2026-11-29T01:02:03.000000004Z" ||
		b["channel"] != "cli" || b["cause"] != nil {
		t.Fatalf("event body %v (%s)", b, kind)
	}

	e.Type, e.NodeID, e.Data = "CommandAccepted", "", map[string]any{"commandId": "c1", "action": "PAUSE", "reason": "look"}
	kind, b = Body(e)
	cause, _ := b["cause"].(map[string]any)
	if kind != journal.KindDecision || b["actor"] != "key:ops" || b["channel"] != "cli" || b["decision"] != "operator_command" ||
		cause["commandId"] != "c1" || cause["reason"] != "look" || cause["action"] != "PAUSE" {
		t.Fatalf("accepted command body %v (%s)", b, kind)
	}

	e.Type, e.Channel, e.Data = "CommandRejected", "", map[string]any{"commandId": "c1", "message": "the execution has ended"}
	kind, b = Body(e)
	cause, _ = b["cause"].(map[string]any)
	if kind != journal.KindDecision || b["channel"] != "" || cause["reason"] != "the execution has ended" {
		t.Fatalf("rejected command body %v (%s)", b, kind)
	}
	if _, err := journal.Next(nil, "e", kind, at, b); err != nil {
		t.Fatalf("a decision body has no canonical form: %v", err)
	}

	// An ADMIN's release of a supervisor's hold is a decision of its own.
	e.Type, e.Channel, e.Actor = "HoldReleased", "mcp", "key:admin"
	e.Data = map[string]any{"supervisorId": "guard", "heldSince": "2026-11-29T01:00:00Z", "holdReason": "vendor",
		"reason": "vendor is back", "message": "released"}
	kind, b = Body(e)
	cause, _ = b["cause"].(map[string]any)
	if kind != journal.KindDecision || b["decision"] != "hold_release" || b["actor"] != "key:admin" || b["channel"] != "mcp" ||
		cause["supervisorId"] != "guard" || cause["holdReason"] != "vendor" || cause["reason"] != "vendor is back" || cause["heldSince"] == nil {
		t.Fatalf("hold release body %v (%s)", b, kind)
	}
	if _, err := journal.Next(nil, "e", kind, at, b); err != nil {
		t.Fatalf("a hold release body has no canonical form: %v", err)
	}
}

func TestNewObserverRefusesABadKey(t *testing.T) {
	if _, err := NewObserver(nil, ed25519.PrivateKey{1, 2}, time.Now, ObserverConfig{}, nil); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("got %v, want invalid", err)
	}
}
