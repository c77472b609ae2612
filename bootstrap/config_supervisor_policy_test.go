package bootstrap

import (
	"slices"
	"strings"
	"testing"
)

func TestServeConfigSupervisorPolicy(t *testing.T) {
	c, err := parse(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.SupervisorPolicy; len(p.AllowedCommands()) != 0 || p.AllowAny() || len(p.EnvAllowed()) != 0 {
		t.Errorf("default policy %+v, want no command, no allow-any, no variable", p)
	}
	c, err = parse(t, []string{"--supervisor-env-allowed", "TEAM, REGION"},
		map[string]string{"YUKTA_PROCESS_ALLOWED_COMMANDS": "/opt/yukta/decide, /opt/my tools/judge", "YUKTA_SUPERVISOR_ENV_ALLOWED": "IGNORED"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SupervisorPolicy.AllowedCommands(); !slices.Equal(got, []string{"/opt/yukta/decide", "/opt/my tools/judge"}) {
		t.Errorf("commands %q: split at commas only", got)
	}
	if got := c.SupervisorPolicy.EnvAllowed(); !slices.Equal(got, []string{"TEAM", "REGION"}) {
		t.Errorf("env %q: the flag wins", got)
	}
	if c, err = parse(t, []string{"--process-allow-any=true"}, nil); err != nil || !c.SupervisorPolicy.AllowAny() {
		t.Errorf("allow-any alone: %v, %v", c.SupervisorPolicy.AllowAny(), err)
	}
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"YUKTA_PROCESS_ALLOWED_COMMANDS": "/opt/a", "YUKTA_PROCESS_ALLOW_ANY": "true"}, "YUKTA_PROCESS_ALLOW_ANY) is true while"},
		{map[string]string{"YUKTA_PROCESS_ALLOW_ANY": "sure"}, `--process-allow-any (YUKTA_PROCESS_ALLOW_ANY) "sure" must be true or false`},
		{map[string]string{"YUKTA_PROCESS_ALLOWED_COMMANDS": "decide"}, `YUKTA_PROCESS_ALLOWED_COMMANDS): "decide" is not a clean absolute path`},
		{map[string]string{"YUKTA_SUPERVISOR_ENV_ALLOWED": "A-B"}, `YUKTA_SUPERVISOR_ENV_ALLOWED): "A-B"`},
	} {
		if _, err := parse(t, nil, tt.env); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: got %v, want %q", tt.env, err, tt.want)
		}
	}
}
