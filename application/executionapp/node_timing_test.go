package executionapp

import (
	"reflect"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/execution"
)

// TestNodeEventTiming: a NodeStatusChanged carries the node's timing as the
// status API shows it after the change, and the latest attempt only when the
// change recorded one. wallMs is always there (it marks a timed event).
func TestNodeEventTiming(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	fresh := execution.NewNode("call", "HTTP_REQUEST")
	before := fresh.State()

	// The first attempt ran 50 ms and failed for good.
	failed := execution.NewNode("call", "HTTP_REQUEST")
	failed.Ran(t0.Add(10*ms), t0.Add(60*ms))
	failed.Processed(0)
	if err := failed.Fail(t0.Add(time.Second), "boom"); err != nil {
		t.Fatal(err)
	}
	// A change after the attempt was recorded (before already holds it)
	// carries the totals but no attempt.
	ranBefore := failed.State()

	// A node no message reached, settled SKIPPED.
	skipped := execution.NewNode("out", "RESULT")
	skipped.Settle(t0.Add(2 * time.Second))

	tests := []struct {
		name   string
		before execution.NodeState
		after  execution.NodeState
		to     execution.NodeStatus
		want   map[string]any
	}{
		{"failed after one attempt", before, failed.State(), execution.NodeFailure, map[string]any{
			"from": "PENDING", "to": "FAILURE", "received": int64(1), "emitted": int64(0), "error": "boom",
			"wallMs": int64(50), "startedAt": "2026-03-01T12:00:00.01Z", "endedAt": "2026-03-01T12:00:00.06Z",
			"attemptStartedAt": "2026-03-01T12:00:00.01Z", "attemptEndedAt": "2026-03-01T12:00:00.06Z", "attemptWallMs": int64(50)}},
		{"no attempt in this change", ranBefore, failed.State(), execution.NodeFailure, map[string]any{
			"from": "PENDING", "to": "FAILURE", "received": int64(1), "emitted": int64(0), "error": "boom",
			"wallMs": int64(50), "startedAt": "2026-03-01T12:00:00.01Z", "endedAt": "2026-03-01T12:00:00.06Z"}},
		{"never ran, settled", before, skipped.State(), execution.NodeSkipped, map[string]any{
			"from": "PENDING", "to": "SKIPPED", "received": int64(0), "emitted": int64(0),
			"wallMs": int64(0), "endedAt": "2026-03-01T12:00:02Z"}},
		{"live, never ran", before, before, execution.NodePaused, map[string]any{
			"from": "PENDING", "to": "PAUSED", "received": int64(0), "emitted": int64(0), "wallMs": int64(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := nodeEventData(execution.NodePending, tt.to, tt.before, tt.after); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
