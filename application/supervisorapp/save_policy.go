package supervisorapp

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
	"github.com/yukta/yukta/domain/supervisor"
)

// The server settings a SavePolicy is made of, as messages name them.
const (
	SettingAllowedCommands = "yukta.process.allowed-commands (YUKTA_PROCESS_ALLOWED_COMMANDS)"
	SettingAllowAny        = "yukta.process.allow-any (YUKTA_PROCESS_ALLOW_ANY)"
	SettingEnvAllowed      = "yukta.supervisor.env-allowed (YUKTA_SUPERVISOR_ENV_ALLOWED)"
)

// ErrCommandNotAllowed: a process supervisor names an executable this
// server does not run.
var ErrCommandNotAllowed = fmt.Errorf("supervisorapp: command not allowed: %w", fault.ErrForbidden)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// SavePolicy is server configuration a supervisor must fit besides its
// document's own rules: the executables process supervisors may run, and
// the environment variables the http engine's headers may read as
// ${env.NAME}. The zero policy allows no executable and no variable. It
// is checked when a supervisor is saved, and again by the process engine
// before it starts a program (the configuration may have changed since).
type SavePolicy struct {
	commands []string
	allowAny bool
	env      []string
}

// NewSavePolicy checks the configuration: commands are clean absolute
// paths (no "..", no "//", no trailing "/"), allowAny only with no
// commands, env names of letters, digits and '_'. Repeats are dropped.
func NewSavePolicy(commands []string, allowAny bool, envNames []string) (SavePolicy, error) {
	var errs []string
	p := SavePolicy{allowAny: allowAny}
	for _, c := range commands {
		switch {
		case !path.IsAbs(c) || path.Clean(c) != c || strings.ContainsAny(c, "\n\r,"):
			errs = append(errs, fmt.Sprintf("%s: %q is not a clean absolute path such as /opt/yukta/decide", SettingAllowedCommands, c))
		case !slices.Contains(p.commands, c):
			p.commands = append(p.commands, c)
		}
	}
	if allowAny && len(commands) > 0 {
		errs = append(errs, fmt.Sprintf("%s is true while %s lists executables; allow-any applies only when the list is empty: clear one of them",
			SettingAllowAny, SettingAllowedCommands))
	}
	for _, n := range envNames {
		switch {
		case !envName.MatchString(n):
			errs = append(errs, fmt.Sprintf("%s: %q is not an environment variable name (letters, digits and '_', not starting with a digit)", SettingEnvAllowed, n))
		case !slices.Contains(p.env, n):
			p.env = append(p.env, n)
		}
	}
	if len(errs) > 0 {
		return SavePolicy{}, fault.Newf(fault.ErrInvalid, "%s", strings.Join(errs, "; "))
	}
	return p, nil
}

// AllowedCommands returns the executables process supervisors may run.
func (p SavePolicy) AllowedCommands() []string { return slices.Clone(p.commands) }

// AllowAny reports whether any executable may run (the list is empty).
func (p SavePolicy) AllowAny() bool { return p.allowAny }

// EnvAllowed returns the variables headers may read.
func (p SavePolicy) EnvAllowed() []string { return slices.Clone(p.env) }

// CheckCommand reports whether a process supervisor may run command: it
// is on the list, exactly as written (a path is never cleaned before the
// comparison: /opt/a/link/../b may be another file than /opt/a/b), or the
// list is empty and allow-any is set. A refusal matches
// ErrCommandNotAllowed and names the setting to change.
func (p SavePolicy) CheckCommand(command string) error {
	if p.allowsCommand(command) {
		return nil
	}
	return fault.Newf(ErrCommandNotAllowed, "%s", p.commandRefusal(command))
}

func (p SavePolicy) allowsCommand(command string) bool {
	if len(p.commands) == 0 {
		return p.allowAny && path.IsAbs(command)
	}
	return slices.Contains(p.commands, command)
}

func (p SavePolicy) commandRefusal(command string) string {
	if len(p.commands) == 0 {
		return fmt.Sprintf("%q is not allowed: this server runs no process supervisors, because %s is empty; "+
			"the operator adds the executable there (or sets %s=true with the list empty) and restarts the server",
			command, SettingAllowedCommands, SettingAllowAny)
	}
	return fmt.Sprintf("%q is not allowed: this server runs only %s (%s); name one of them, or ask the operator to add it there and restart the server",
		command, strings.Join(p.commands, ", "), SettingAllowedCommands)
}

// Check lists what of sup the policy refuses, each with its path: a
// process supervisor's engine.settings.command, an http supervisor's
// engine.settings.headers.<name> reading a variable not on the list.
func (p SavePolicy) Check(sup supervisor.Supervisor) []fault.Violation {
	var vs []fault.Violation
	settings := sup.Settings()
	switch sup.EngineType() {
	case "process":
		if c, ok := settings["command"].(string); ok && !p.allowsCommand(c) {
			vs = append(vs, fault.Violation{Path: "engine.settings.command", Message: p.commandRefusal(c)})
		}
	case "http":
		headers, _ := settings["headers"].(map[string]any)
		names := make([]string, 0, len(headers))
		for k := range headers {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, h := range names {
			v, _ := headers[h].(string)
			var seen []string
			for _, n := range supervisor.EnvRefNames(v) {
				if slices.Contains(p.env, n) || slices.Contains(seen, n) {
					continue
				}
				seen = append(seen, n)
				msg := fmt.Sprintf("reads ${env.%s}, which supervisors may not read: %s is empty on this server; "+
					"put the value in secretHeaders, or ask the operator to add %s there", n, SettingEnvAllowed, n)
				if len(p.env) > 0 {
					msg = fmt.Sprintf("reads ${env.%s}, which is not in %s, the variables supervisors may read (%s); "+
						"use one of them, put the value in secretHeaders, or ask the operator to add %s there", n, SettingEnvAllowed, strings.Join(p.env, ", "), n)
				}
				vs = append(vs, fault.Violation{Path: jsonvalue.Key("engine.settings.headers", h), Message: msg})
			}
		}
	}
	return vs
}
