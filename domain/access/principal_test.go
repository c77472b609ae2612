package access_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/session"
)

func mustPrincipal(t *testing.T, name string, role access.Role, sessions []string) access.Principal {
	t.Helper()
	p, err := access.NewPrincipal(name, role, sessions)
	if err != nil {
		t.Fatalf("NewPrincipal(%q, %s, %q): %v", name, role, sessions, err)
	}
	return p
}

// The text the session store gives for a session that does not exist
// (adapters/postgres, sessionNotFound). A hidden session must read the same.
const unknownSessionText = `session "other" does not exist; call GET /api/sessions (MCP: list_sessions) to see the sessions you can use`

func TestCanUnlimited(t *testing.T) {
	t.Parallel()
	viewer := mustPrincipal(t, "dash", access.Viewer, nil)
	operator := mustPrincipal(t, "ci", access.Operator, nil)
	admin := mustPrincipal(t, "alice", access.Admin, nil)
	tests := []struct {
		name    string
		p       access.Principal
		op      access.Operation
		session string
		want    string // "" for allowed, else the error text
	}{
		{"viewer reads a session", viewer, access.ReadSessions, "etl", ""},
		{"viewer lists sessions", viewer, access.ReadSessions, "", ""},
		{"viewer reads metrics", viewer, access.ReadMetrics, "", ""},
		{"viewer cannot start", viewer, access.StartExecution, "etl",
			"key:dash has the role VIEWER and cannot start executions; use a key with the role OPERATOR or ADMIN"},
		{"viewer cannot apply", viewer, access.ApplySession, "etl",
			"key:dash has the role VIEWER and cannot create or replace sessions; use a key with the role ADMIN"},
		{"operator starts", operator, access.StartExecution, "etl", ""},
		{"operator posts a webhook", operator, access.PostWebhook, "etl", ""},
		{"operator cannot delete", operator, access.DeleteSession, "etl",
			"key:ci has the role OPERATOR and cannot delete sessions; use a key with the role ADMIN"},
		{"operator cannot decide approvals", operator, access.DecideApprovals, "etl",
			"key:ci has the role OPERATOR and cannot decide approvals; use a key with the role ADMIN"},
		{"admin manages credentials server-wide", admin, access.ManageCredentials, "", ""},
		{"admin applies any session", admin, access.ApplySession, "anything", ""},
		{"admin: unknown operation", admin, 0, "etl",
			"key:alice asked to perform unknown operation 0; that operation is not in the permission table, so it is denied to every key"},
		{"anonymous does everything", access.Anonymous(), access.DeleteSession, "etl", ""},
		{"zero principal does nothing", access.Principal{}, access.ReadSessions, "",
			"the caller is not authenticated; present an API key whose role may read sessions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.Can(tt.op, tt.session)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Can(%s, %q): got %v, want nil", tt.op, tt.session, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Can(%s, %q): got nil, want %q", tt.op, tt.session, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Can(%s, %q) error: got %q, want %q", tt.op, tt.session, got, tt.want)
			}
			fe, ok := errors.AsType[*access.ForbiddenError](err)
			if !ok || !errors.Is(err, access.ErrForbidden) {
				t.Fatalf("Can(%s, %q) error: got %T, want *access.ForbiddenError matching ErrForbidden", tt.op, tt.session, err)
			}
			if fe.Op != tt.op || fe.Role != tt.p.Role() || fe.Need != tt.op.MinRole() || fe.Actor != tt.p.Actor() {
				t.Errorf("ForbiddenError: got %+v, want Op %s, Role %s, Need %s, Actor %q", fe, tt.op, tt.p.Role(), tt.op.MinRole(), tt.p.Actor())
			}
			if errors.Is(err, fault.ErrNotFound) || errors.Is(err, fault.ErrInvalid) {
				t.Errorf("Can(%s, %q) error: got a match for a fault kind, want ErrForbidden alone", tt.op, tt.session)
			}
		})
	}
}

func TestCanLimited(t *testing.T) {
	t.Parallel()
	viewer := mustPrincipal(t, "dash", access.Viewer, []string{"web", "etl"})
	operator := mustPrincipal(t, "ci", access.Operator, []string{"etl"})
	admin := mustPrincipal(t, "team-a", access.Admin, []string{"etl", "web"})
	const (
		allowed   = "allowed"
		hidden    = "hidden"
		forbidden = "forbidden"
	)
	tests := []struct {
		name    string
		p       access.Principal
		op      access.Operation
		session string
		want    string
		text    string // for forbidden
	}{
		{"viewer reads its session", viewer, access.ReadExecutions, "etl", allowed, ""},
		{"viewer lists across sessions", viewer, access.ReadSessions, "", allowed, ""},
		{"viewer reads plugins", viewer, access.ReadPlugins, "", allowed, ""},
		{"viewer reads a foreign session", viewer, access.ReadLogs, "other", hidden, ""},
		// The role is checked first and does not depend on the session.
		{"viewer starts in a foreign session", viewer, access.StartExecution, "other", forbidden,
			"key:dash has the role VIEWER and cannot start executions; use a key with the role OPERATOR or ADMIN"},
		{"operator controls its session", operator, access.ControlExecution, "etl", allowed, ""},
		{"operator answers in a foreign session", operator, access.AnswerInput, "other", hidden, ""},
		{"operator webhook, no session named", operator, access.PostWebhook, "", forbidden,
			"key:ci is limited to the sessions etl and cannot post webhooks outside them; name one of its sessions, or use a key without a session list"},
		{"admin applies its session", admin, access.ApplySession, "web", allowed, ""},
		{"admin cannot create a session outside its list", admin, access.ApplySession, "other", hidden, ""},
		{"admin deletes a foreign session", admin, access.DeleteSession, "other", hidden, ""},
		{"admin manages a supervisor of its session", admin, access.ManageSupervisors, "etl", allowed, ""},
		{"admin manages a server-wide supervisor", admin, access.ManageSupervisors, "", forbidden,
			"key:team-a is limited to the sessions etl, web and cannot manage supervisors outside them; name one of its sessions, or use a key without a session list"},
		{"admin issues a server-wide credential", admin, access.ManageCredentials, "", forbidden,
			"key:team-a is limited to the sessions etl, web and cannot manage credentials outside them; name one of its sessions, or use a key without a session list"},
		{"admin reads metrics", admin, access.ReadMetrics, "", allowed, ""},
		{"session ids are exact", admin, access.ReadSessions, "ETL", hidden, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.Can(tt.op, tt.session)
			switch tt.want {
			case allowed:
				if err != nil {
					t.Fatalf("Can(%s, %q): got %v, want nil", tt.op, tt.session, err)
				}
			case hidden:
				// Exactly what an unknown session gets.
				want := access.SessionNotFound(tt.session)
				if err == nil || err.Error() != want.Error() {
					t.Fatalf("Can(%s, %q): got %v, want %q", tt.op, tt.session, err, want)
				}
				if !errors.Is(err, session.ErrSessionNotFound) || !errors.Is(err, fault.ErrNotFound) {
					t.Errorf("Can(%s, %q): got no match for session.ErrSessionNotFound and fault.ErrNotFound, want both", tt.op, tt.session)
				}
				if errors.Is(err, access.ErrForbidden) {
					t.Errorf("Can(%s, %q): got a match for ErrForbidden, want the not-found error alone", tt.op, tt.session)
				}
				if tt.p.SessionVisible(tt.session) {
					t.Errorf("SessionVisible(%q): got true, want false", tt.session)
				}
			case forbidden:
				if err == nil || err.Error() != tt.text {
					t.Fatalf("Can(%s, %q): got %v, want %q", tt.op, tt.session, err, tt.text)
				}
				if !errors.Is(err, access.ErrForbidden) {
					t.Errorf("Can(%s, %q): got no match for ErrForbidden, want one", tt.op, tt.session)
				}
			}
		})
	}
}

func TestSessionNotFoundText(t *testing.T) {
	t.Parallel()
	err := access.SessionNotFound("other")
	if got := err.Error(); got != unknownSessionText {
		t.Errorf("SessionNotFound: got %q, want %q", got, unknownSessionText)
	}
	if !errors.Is(err, session.ErrSessionNotFound) {
		t.Errorf("errors.Is(SessionNotFound, session.ErrSessionNotFound): got false, want true")
	}
}

func TestSessionVisible(t *testing.T) {
	t.Parallel()
	limited := mustPrincipal(t, "ci", access.Operator, []string{"web", "etl"})
	unlimited := mustPrincipal(t, "alice", access.Admin, nil)
	tests := []struct {
		name    string
		p       access.Principal
		session string
		want    bool
	}{
		{"limited, listed", limited, "etl", true},
		{"limited, listed second", limited, "web", true},
		{"limited, not listed", limited, "api", false},
		{"limited, empty id", limited, "", false},
		{"unlimited", unlimited, "api", true},
		{"anonymous", access.Anonymous(), "api", true},
		{"zero principal", access.Principal{}, "api", false},
	}
	for _, tt := range tests {
		if got := tt.p.SessionVisible(tt.session); got != tt.want {
			t.Errorf("%s: SessionVisible(%q): got %v, want %v", tt.name, tt.session, got, tt.want)
		}
	}
}

func TestPrincipalAccessors(t *testing.T) {
	t.Parallel()
	in := []string{"web", "etl"}
	p := mustPrincipal(t, "ci-bot", access.Operator, in)
	in[0] = "changed"
	if got, want := p.Sessions(), []string{"etl", "web"}; !slices.Equal(got, want) {
		t.Errorf("Sessions(): got %q, want %q (sorted, and not aliased to the input)", got, want)
	}
	p.Sessions()[0] = "changed"
	if got := p.Sessions()[0]; got != "etl" {
		t.Errorf("Sessions() after editing a returned copy: got %q first, want etl", got)
	}
	tests := []struct {
		name                string
		p                   access.Principal
		actor, pname        string
		role                access.Role
		limited, anon, zero bool
	}{
		{"limited key", p, "key:ci-bot", "ci-bot", access.Operator, true, false, false},
		{"unlimited key", mustPrincipal(t, "Alice.A_1", access.Admin, nil), "key:Alice.A_1", "Alice.A_1", access.Admin, false, false, false},
		{"anonymous", access.Anonymous(), "anonymous", "", access.Admin, false, true, false},
		{"zero", access.Principal{}, "", "", 0, false, false, true},
	}
	for _, tt := range tests {
		if got := tt.p.Actor(); got != tt.actor {
			t.Errorf("%s: Actor(): got %q, want %q", tt.name, got, tt.actor)
		}
		if got := tt.p.String(); got != tt.actor {
			t.Errorf("%s: String(): got %q, want %q", tt.name, got, tt.actor)
		}
		if got := tt.p.Name(); got != tt.pname {
			t.Errorf("%s: Name(): got %q, want %q", tt.name, got, tt.pname)
		}
		if got := tt.p.Role(); got != tt.role {
			t.Errorf("%s: Role(): got %s, want %s", tt.name, got, tt.role)
		}
		if got := tt.p.Limited(); got != tt.limited {
			t.Errorf("%s: Limited(): got %v, want %v", tt.name, got, tt.limited)
		}
		if got := tt.p.Anonymous(); got != tt.anon {
			t.Errorf("%s: Anonymous(): got %v, want %v", tt.name, got, tt.anon)
		}
		if got := tt.p.IsZero(); got != tt.zero {
			t.Errorf("%s: IsZero(): got %v, want %v", tt.name, got, tt.zero)
		}
	}
}

func TestNewPrincipalRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		pname     string
		role      access.Role
		sessions  []string
		wantPaths []string
	}{
		{"empty name", "", access.Viewer, nil, []string{"name"}},
		{"name with a space", "ci bot", access.Viewer, nil, []string{"name"}},
		{"name with a colon", "key:ci", access.Viewer, nil, []string{"name"}},
		{"name starting with a dot", ".ci", access.Viewer, nil, []string{"name"}},
		{"name too long", string(make([]byte, 65)), access.Viewer, nil, []string{"name"}},
		{"zero role", "ci", 0, nil, []string{"role"}},
		{"role beyond WORKER", "ci", access.Worker + 1, nil, []string{"role"}},
		{"empty session list", "ci", access.Viewer, []string{}, []string{"sessions"}},
		{"bad and repeated sessions", "ci", access.Viewer, []string{"Etl", "web", "web", ""}, []string{"sessions", "sessions", "sessions"}},
		{"everything wrong", "", 0, []string{}, []string{"name", "role", "sessions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := access.NewPrincipal(tt.pname, tt.role, tt.sessions)
			ve, ok := errors.AsType[*fault.ValidationError](err)
			if !ok {
				t.Fatalf("NewPrincipal: got %v, want a *fault.ValidationError", err)
			}
			var paths []string
			for _, v := range ve.Violations {
				paths = append(paths, v.Path)
			}
			if !slices.Equal(paths, tt.wantPaths) {
				t.Errorf("violation paths: got %q, want %q (%v)", paths, tt.wantPaths, err)
			}
		})
	}
}
