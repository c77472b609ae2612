package bootstrap

import (
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/supervisor"
)

// TestLoopBoundSettings: --supervisor-max-depth and
// --supervisor-commands-per-minute default to the domain's bounds, come
// from their flags or variables, and a value outside the declared range
// stops the server naming the setting and the range.
func TestLoopBoundSettings(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Loops != supervisor.DefaultLoopBounds() {
		t.Fatalf("default loop bounds = %+v, want %+v", c.Loops, supervisor.DefaultLoopBounds())
	}
	c, err = parse(t, []string{"--supervisor-max-depth", "8"}, map[string]string{"YUKTA_SUPERVISOR_MAX_DEPTH": "2", "YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE": "600"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Loops != (supervisor.LoopBounds{MaxDepth: 8, CommandsPerMinute: 600}) {
		t.Fatalf("loop bounds = %+v, want depth 8 from the flag and 600 from the variable", c.Loops)
	}
	_, err = parse(t, nil, map[string]string{"YUKTA_SUPERVISOR_MAX_DEPTH": "21", "YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE": "0"})
	for _, want := range []string{`--supervisor-max-depth (YUKTA_SUPERVISOR_MAX_DEPTH) "21" must be an integer from 1 to 20`,
		`--supervisor-commands-per-minute (YUKTA_SUPERVISOR_COMMANDS_PER_MINUTE) "0" must be an integer from 1 to 10000`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to say %q", err, want)
		}
	}
}
