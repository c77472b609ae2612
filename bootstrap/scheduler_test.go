package bootstrap

import (
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/execution"
)

// TestSchedulerSettings: --max-running and --reserved-supervisor-slots come
// from their flags or variables, default to no limit and 4, and a bad value
// stops the server naming each setting.
func TestSchedulerSettings(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Slots != (execution.Slots{MaxRunning: 0, Reserved: 4}) {
		t.Fatalf("default slots = %+v, want no limit and 4 reserved", c.Slots)
	}
	c, err = parse(t, []string{"--reserved-supervisor-slots", "2"}, map[string]string{"YUKTA_MAX_RUNNING": "50", "YUKTA_RESERVED_SUPERVISOR_SLOTS": "9"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Slots != (execution.Slots{MaxRunning: 50, Reserved: 2}) {
		t.Fatalf("slots = %+v, want 50 from the variable and 2 from the flag", c.Slots)
	}
	_, err = parse(t, nil, map[string]string{"YUKTA_MAX_RUNNING": "-1", "YUKTA_RESERVED_SUPERVISOR_SLOTS": "many"})
	for _, want := range []string{`--max-running (YUKTA_MAX_RUNNING) "-1" must be an integer from 0 (no limit) to 1000000`,
		`--reserved-supervisor-slots (YUKTA_RESERVED_SUPERVISOR_SLOTS) "many" must be an integer from 0 to 10000`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to say %q", err, want)
		}
	}
	if _, err := parse(t, nil, map[string]string{"YUKTA_MAX_RUNNING": "1000001"}); err == nil {
		t.Error("YUKTA_MAX_RUNNING=1000001: got nil, want an error")
	}
}
