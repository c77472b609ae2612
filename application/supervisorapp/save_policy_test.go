package supervisorapp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
)

func TestNewSavePolicyRefusesABadConfiguration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		commands []string
		allowAny bool
		env      []string
		words    []string
	}{
		{"a relative path", []string{"decide"}, false, nil, []string{`YUKTA_PROCESS_ALLOWED_COMMANDS): "decide" is not a clean absolute path`}},
		{"a path that is not clean", []string{"/opt//decide", "/opt/a/../decide", "/opt/"}, false, nil,
			[]string{`"/opt//decide"`, `"/opt/a/../decide"`, `"/opt/"`}},
		{"allow-any with a list", []string{"/opt/yukta/decide"}, true, nil, []string{"YUKTA_PROCESS_ALLOW_ANY) is true while", "clear one of them"}},
		{"bad variable names", nil, false, []string{"1X", "A-B"}, []string{`YUKTA_SUPERVISOR_ENV_ALLOWED): "1X" is not`, `"A-B"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := supervisorapp.NewSavePolicy(tt.commands, tt.allowAny, tt.env)
			if !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("got %v, want invalid", err)
			}
			for _, w := range tt.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

func TestSavePolicyCheckCommand(t *testing.T) {
	t.Parallel()
	listed, err := supervisorapp.NewSavePolicy([]string{"/opt/yukta/decide", "/opt/yukta/decide"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	anyCmd, err := supervisorapp.NewSavePolicy(nil, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		p       supervisorapp.SavePolicy
		command string
		ok      bool
	}{
		{"on the list", listed, "/opt/yukta/decide", true},
		{"off the list", listed, "/opt/yukta/other", false},
		{"the same file written another way is not the listed path", listed, "/opt/yukta/./decide", false},
		{"allow-any with an empty list", anyCmd, "/usr/local/bin/anything", true},
		{"allow-any still needs an absolute path", anyCmd, "anything", false},
		{"the zero policy runs nothing", supervisorapp.SavePolicy{}, "/opt/yukta/decide", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.CheckCommand(tt.command)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, supervisorapp.ErrCommandNotAllowed)) {
				t.Errorf("CheckCommand(%q) = %v, want allowed %v", tt.command, err, tt.ok)
			}
		})
	}
	if got := listed.AllowedCommands(); len(got) != 1 {
		t.Errorf("repeats kept: %v", got)
	}
}

// TestApplyRefusesWhatThePolicyForbids: a supervisor naming an executable
// off the list, or a header reading a variable off the list, is refused
// with every other problem, each at its path, and nothing is stored.
func TestApplyRefusesWhatThePolicyForbids(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p, err := supervisorapp.NewSavePolicy([]string{"/opt/yukta/decide"}, false, []string{"TEAM"})
	if err != nil {
		t.Fatal(err)
	}
	e.apply.UsePolicy(p)

	_, err = e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "proc", Actor: "key:admin", Channel: "rest",
		Document: []byte(`{"name":"P","engine":{"type":"process","settings":{"command":"/usr/bin/evil"}},"parentId":"nobody"}`)})
	if !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("apply: got %v, want a 400", err)
	}
	lines := violations(t, err)
	if !hasViolation(lines, "engine.settings.command", `"/usr/bin/evil" is not allowed: this server runs only /opt/yukta/decide (yukta.process.allowed-commands (YUKTA_PROCESS_ALLOWED_COMMANDS))`) ||
		!hasViolation(lines, "parentId", "does not exist") || len(lines) != 2 {
		t.Errorf("violations: %q; want the command, naming the list and its setting, and the parent", lines)
	}

	_, err = e.apply.Handle(t.Context(), supervisorapp.ApplyInput{ID: "agent", Actor: "key:admin", Channel: "rest",
		Document: []byte(`{"name":"A","engine":{"type":"http","settings":{"url":"https://agent.example.com/y",
			"headers":{"X-Team":"${env.TEAM}","X-Token":"Bearer ${env.DB_PASSWORD}${env.DB_PASSWORD}"}}}}`)})
	lines = violations(t, err)
	if !hasViolation(lines, "engine.settings.headers.X-Token", "reads ${env.DB_PASSWORD}, which is not in yukta.supervisor.env-allowed (YUKTA_SUPERVISOR_ENV_ALLOWED), the variables supervisors may read (TEAM)") ||
		len(lines) != 1 {
		t.Errorf("violations: %q; want one for X-Token only, naming the allow-list setting", lines)
	}
	if n := e.rows(t, "supervisors"); n != 0 {
		t.Errorf("%d supervisors stored, want none", n)
	}

	// What the policy allows is stored.
	e.put(t, "proc", `{"name":"P","engine":{"type":"process","settings":{"command":"/opt/yukta/decide"}}}`)
	e.put(t, "agent", `{"name":"A","engine":{"type":"http","settings":{"url":"https://agent.example.com/y","headers":{"X-Team":"${env.TEAM}"}}}}`)
}
