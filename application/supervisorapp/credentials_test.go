package supervisorapp_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/postgres"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// countingCredentials is the real credential store that also counts its
// lookups and last-use writes (a spy around the real part, not a fake).
type countingCredentials struct {
	*postgres.CredentialStore
	lookups, marks atomic.Int64
}

func (c *countingCredentials) CredentialByHash(ctx context.Context, h supervisor.TokenHash) (supervisor.Credential, error) {
	c.lookups.Add(1)
	return c.CredentialStore.CredentialByHash(ctx, h)
}

func (c *countingCredentials) MarkCredentialUsed(ctx context.Context, h supervisor.TokenHash, at time.Time) error {
	c.marks.Add(1)
	return c.CredentialStore.MarkCredentialUsed(ctx, h, at)
}

// credEnv is the credential use cases over env's database, wired as
// bootstrap wires them, on env's clock.
type credEnv struct {
	*env
	creds  *countingCredentials
	issue  *supervisorapp.IssueCredential
	getc   *supervisorapp.GetCredential
	revoke *supervisorapp.RevokeCredential
	auth   *supervisorapp.AuthenticateAgent
}

func newCredEnv(t *testing.T) *credEnv {
	t.Helper()
	e := &credEnv{env: newEnv(t)}
	clock := func() time.Time { return e.now }
	e.creds = &countingCredentials{CredentialStore: postgres.NewCredentialStore(e.pool)}
	tx := postgres.NewCredentialTransactor(e.pool)
	e.issue = supervisorapp.NewIssueCredential(tx, rand.Reader, clock)
	e.getc = supervisorapp.NewGetCredential(e.store, e.creds)
	e.revoke = supervisorapp.NewRevokeCredential(tx, clock)
	e.auth = supervisorapp.NewAuthenticateAgent(e.creds, e.store, clock)
	return e
}

func (e *credEnv) mustIssue(t *testing.T, in supervisorapp.IssueCredentialInput) supervisorapp.IssuedCredential {
	t.Helper()
	if in.Actor == "" {
		in.Actor, in.Channel = "key:admin", "rest"
	}
	res, err := e.issue.Handle(t.Context(), in)
	if err != nil {
		t.Fatalf("issue %s: %v", in.SupervisorID, err)
	}
	return res
}

// authAs authenticates token from addr (10.0.0.1 when empty).
func (e *credEnv) authAs(t *testing.T, token, addr string) (supervisorapp.AgentIdentity, error) {
	t.Helper()
	a := netip.MustParseAddr("10.0.0.1")
	if addr != "" {
		a = netip.MustParseAddr(addr)
	}
	return e.auth.Handle(t.Context(), supervisorapp.AuthenticateAgentInput{Token: token, Remote: a})
}

// refused fails unless err is the generic refusal with reason; every
// refusal reads the same and never holds the token.
func refused(t *testing.T, err error, reason supervisorapp.AgentRefusalReason, token string) {
	t.Helper()
	r, ok := errors.AsType[*supervisorapp.AgentRefusal](err)
	if !ok || !errors.Is(err, supervisorapp.ErrAgentUnauthenticated) {
		t.Fatalf("error %v (%T), want an *AgentRefusal matching ErrAgentUnauthenticated", err, err)
	}
	if r.Reason != reason {
		t.Fatalf("refusal reason %q, want %q", r.Reason, reason)
	}
	const generic = "the supervisor credential is not valid for this request; an ADMIN issues a new one with POST /api/supervisors/{id}/credential"
	if err.Error() != generic {
		t.Fatalf("refusal text %q, want the generic %q", err.Error(), generic)
	}
	if secret := strings.TrimPrefix(token, supervisor.TokenPrefix); len(secret) > 6 && strings.Contains(fmt.Sprintf("%+v %#v", r, r), secret[6:]) {
		t.Fatalf("the refusal holds the token: %#v", r)
	}
}

// TestCredentialLifecycle is T5 at the use cases over a real database:
// issue, use, rotate (the old token works on no request after the rotation
// returns), revoke, issue again; the events say what happened and never
// hold the token.
func TestCredentialLifecycle(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	e.put(t, "agent", agentDoc("Bearer sup3r-s3cret", ""))
	first := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "agent"})
	if first.Rotated || first.Token.IsZero() || !first.Credential.ExpiresAt().Equal(e.now.Add(720*time.Hour)) {
		t.Fatalf("first issue: %+v, want a new credential for 720 h", first)
	}
	id, err := e.authAs(t, first.Token.Reveal(), "")
	if err != nil {
		t.Fatal(err)
	}
	if id.Supervisor.Supervisor.ID() != "agent" || id.Credential.Hint() != first.Token.Hint() ||
		id.Supervisor.Supervisor.Settings()["secretHeaders"].(map[string]any)["Authorization"] != "***" {
		t.Fatalf("identity: %+v, want agent with its secrets masked", id)
	}

	// Rotate: from the moment Handle returns the first token finds nothing.
	e.now = e.now.Add(time.Minute)
	second := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "agent", TTLHours: 24, Actor: "key:ops", Channel: "mcp"})
	if !second.Rotated || second.Token.Reveal() == first.Token.Reveal() {
		t.Fatalf("second issue: %+v, want a rotation with a new token", second)
	}
	for range 20 {
		_, err := e.authAs(t, first.Token.Reveal(), "")
		refused(t, err, supervisorapp.RefusedUnknown, first.Token.Reveal())
	}
	if _, err := e.authAs(t, second.Token.Reveal(), ""); err != nil {
		t.Fatalf("new token: %v", err)
	}

	// Revoke: the token works no more; revoking again says there is none.
	revoked, err := e.revoke.Handle(t.Context(), supervisorapp.RevokeCredentialInput{SupervisorID: "agent", Actor: "key:admin", Channel: "cli (claimed)"})
	if err != nil || revoked.Hash() != second.Token.Hash() {
		t.Fatalf("revoke: %+v, %v", revoked, err)
	}
	_, err = e.authAs(t, second.Token.Reveal(), "")
	refused(t, err, supervisorapp.RefusedUnknown, second.Token.Reveal())
	_, err = e.revoke.Handle(t.Context(), supervisorapp.RevokeCredentialInput{SupervisorID: "agent"})
	if !errors.Is(err, supervisor.ErrCredentialNotFound) || !errors.Is(err, fault.ErrNotFound) ||
		!strings.Contains(err.Error(), `supervisor "agent" has no credential; an ADMIN issues one with POST /api/supervisors/agent/credential`) {
		t.Fatalf("revoke twice: %v", err)
	}
	third := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "agent"})
	if third.Rotated {
		t.Fatalf("issue after revoke: rotated, want a new credential")
	}
	if _, err := e.authAs(t, third.Token.Reveal(), ""); err != nil {
		t.Fatalf("token issued after the revoke: %v", err)
	}

	// The events: three issues and a revoke, never a token or hint.
	var creds []event
	for _, ev := range e.events(t) {
		for _, tok := range []supervisor.Token{first.Token, second.Token, third.Token} {
			if strings.Contains(ev.data, tok.Reveal()[len(supervisor.TokenPrefix):]) || strings.Contains(ev.data, tok.Hint()) {
				t.Fatalf("event %s holds a token or its hint: %s", ev.typ, ev.data)
			}
		}
		if strings.HasPrefix(ev.typ, "SupervisorCredential") {
			creds = append(creds, ev)
		}
	}
	want := []string{
		supervisorapp.EventCredentialIssued + " key:admin rest " + `"rotated": false`,
		supervisorapp.EventCredentialIssued + " key:ops mcp " + `"rotated": true`,
		supervisorapp.EventCredentialRevoked + " key:admin cli (claimed) " + `"supervisorId": "agent"`,
		supervisorapp.EventCredentialIssued + " key:admin rest " + `"rotated": false`,
	}
	if len(creds) != len(want) {
		t.Fatalf("credential events: %+v, want %d", creds, len(want))
	}
	for i, ev := range creds {
		typ, rest, _ := strings.Cut(want[i], " ")
		if ev.typ != typ || ev.session != "" || !strings.HasPrefix(rest, ev.actor+" "+ev.channel+" ") ||
			!strings.Contains(ev.data, rest[len(ev.actor+" "+ev.channel+" "):]) || !strings.Contains(ev.data, `"supervisorId": "agent"`) {
			t.Errorf("event %d: %+v, want %s", i, ev, want[i])
		}
	}
}

// TestRotationUnderLoad: agents keep presenting the first token while it
// is rotated; no request that starts after the rotation returned is let
// in with it.
func TestRotationUnderLoad(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	e.put(t, "agent", agentDoc("Bearer t", ""))
	old := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "agent"}).Token.Reveal()
	var rotatedAt atomic.Int64 // unix nanoseconds; 0 until the rotation returned
	var late, before atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now().UnixNano()
				_, err := e.auth.Handle(context.Background(), supervisorapp.AuthenticateAgentInput{Token: old, Remote: netip.MustParseAddr("10.0.0.1")})
				if r := rotatedAt.Load(); r != 0 && start > r {
					if err == nil {
						late.Add(1)
					}
				} else if err == nil {
					before.Add(1)
				}
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	time.Sleep(50 * time.Millisecond)
	e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "agent"})
	rotatedAt.Store(time.Now().UnixNano())
	time.Sleep(100 * time.Millisecond)
	if late.Load() != 0 || before.Load() == 0 {
		t.Fatalf("old token accepted on %d requests after the rotation (and %d before), want 0 after", late.Load(), before.Load())
	}
}

func TestAuthenticateAgentRefusals(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	e.put(t, "agent", agentDoc("Bearer t", ""))
	issued := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "agent", TTLHours: 1, AllowedAddresses: []string{"10.0.0.0/8", "2001:db8::/32"}})
	tok := issued.Token.Reveal()

	// A typo, a made-up token and a stranger are refused before any lookup.
	lookups := e.creds.lookups.Load()
	swap := byte('a')
	if tok[20] == 'a' {
		swap = 'b'
	}
	typo := tok[:20] + string(swap) + tok[21:]
	for _, bad := range []string{typo, "", "Bearer " + tok, strings.ToUpper(tok), "yks_" + strings.Repeat("a", 48), "api-key-of-a-person-0123456789abcdef"} {
		_, err := e.authAs(t, bad, "")
		refused(t, err, supervisorapp.RefusedMalformed, tok)
	}
	if n := e.creds.lookups.Load() - lookups; n != 0 {
		t.Fatalf("malformed tokens cost %d lookups, want 0", n)
	}
	// A well-formed token that was never issued costs one.
	never, err := supervisor.NewToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.authAs(t, never.Reveal(), "")
	refused(t, err, supervisorapp.RefusedUnknown, never.Reveal())
	if n := e.creds.lookups.Load() - lookups; n != 1 {
		t.Fatalf("an unknown well-formed token cost %d lookups, want 1", n)
	}

	// Addresses: inside (IPv4, IPv4-mapped, IPv6) in, outside out.
	for _, a := range []string{"10.200.0.9", "::ffff:10.0.0.7", "2001:db8::42"} {
		if _, err := e.authAs(t, tok, a); err != nil {
			t.Errorf("from %s: %v, want allowed", a, err)
		}
	}
	for _, a := range []string{"192.0.2.1", "::ffff:192.0.2.1", "2001:db9::1", "127.0.0.1"} {
		_, err := e.authAs(t, tok, a)
		refused(t, err, supervisorapp.RefusedAddress, tok)
	}
	_, err = e.auth.Handle(t.Context(), supervisorapp.AuthenticateAgentInput{Token: tok})
	refused(t, err, supervisorapp.RefusedAddress, tok)

	// TTL: a second before expiry in, at TTL + 1 s out.
	issuedAt := e.now
	e.now = issuedAt.Add(time.Hour - time.Second)
	if _, err := e.authAs(t, tok, ""); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	e.now = issuedAt.Add(time.Hour + time.Second)
	_, err = e.authAs(t, tok, "")
	refused(t, err, supervisorapp.RefusedExpired, tok)
	if r, _ := errors.AsType[*supervisorapp.AgentRefusal](err); r.SupervisorID != "agent" || r.Hint != issued.Token.Hint() {
		t.Fatalf("expired refusal %+v, want the supervisor and the hint for the log", r)
	}

	// A disabled supervisor's credential is refused; enabled again, taken.
	e.now = issuedAt
	e.put(t, "agent", agentDoc("***", `,"enabled":false`))
	_, err = e.authAs(t, tok, "")
	refused(t, err, supervisorapp.RefusedDisabled, tok)
	e.put(t, "agent", agentDoc("***", ""))
	if _, err := e.authAs(t, tok, ""); err != nil {
		t.Fatalf("enabled again: %v", err)
	}

	// The supervisor's delete takes its credential along.
	if _, err := e.delete.Handle(t.Context(), supervisorapp.DeleteInput{ID: "agent"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.authAs(t, tok, "")
	refused(t, err, supervisorapp.RefusedUnknown, tok)
	if n := e.rows(t, "supervisor_credentials"); n != 0 {
		t.Fatalf("credentials after the supervisor's delete: %d, want 0", n)
	}
}

// A database that cannot answer is an outage, not a wrong token.
func TestAuthenticateAgentOutageIsNoRefusal(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	e.put(t, "agent", agentDoc("Bearer t", ""))
	tok := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "agent"}).Token.Reveal()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := e.auth.Handle(ctx, supervisorapp.AuthenticateAgentInput{Token: tok})
	if err == nil || errors.Is(err, supervisorapp.ErrAgentUnauthenticated) {
		t.Fatalf("lookup on a cancelled context: %v, want an error that is not a refusal", err)
	}
}

func TestLastUsedIsWrittenOnceAMinute(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	e.put(t, "agent", agentDoc("Bearer t", ""))
	tok := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "agent"}).Token.Reveal()
	start := e.now
	for i := range 10 {
		e.now = start.Add(time.Duration(i) * 5 * time.Second) // 0 … 45 s
		if _, err := e.authAs(t, tok, ""); err != nil {
			t.Fatal(err)
		}
	}
	e.now = start.Add(61 * time.Second)
	if _, err := e.authAs(t, tok, ""); err != nil {
		t.Fatal(err)
	}
	if n := e.creds.marks.Load(); n != 2 {
		t.Fatalf("last-use writes for 11 requests over 61 s: %d, want 2", n)
	}
	c, err := e.getc.Handle(t.Context(), supervisorapp.GetCredentialInput{SupervisorID: "agent"})
	if err != nil || !c.LastUsedAt().Equal(start.Add(61*time.Second)) {
		t.Fatalf("last used %v, %v; want %v", c.LastUsedAt(), err, start.Add(61*time.Second))
	}
}

func TestIssueCredentialRefusals(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	e.put(t, "agent", agentDoc("Bearer t", ""))
	_, err := e.issue.Handle(t.Context(), supervisorapp.IssueCredentialInput{SupervisorID: "agent", TTLHours: 9000,
		AllowedAddresses: []string{"10.0.0.0/8", "nowhere"}})
	lines := violations(t, err)
	if len(lines) != 2 || !hasViolation(lines, "ttlHours", "9000 is more than 8760") || !hasViolation(lines, "allowedAddresses[1]", `"nowhere" is not a CIDR`) {
		t.Fatalf("violations: %v", lines)
	}
	_, err = e.issue.Handle(t.Context(), supervisorapp.IssueCredentialInput{SupervisorID: "ghost"})
	if !errors.Is(err, supervisor.ErrSupervisorNotFound) || !strings.Contains(err.Error(), `supervisor "ghost" does not exist`) {
		t.Fatalf("issue for ghost: %v", err)
	}
	_, err = e.revoke.Handle(t.Context(), supervisorapp.RevokeCredentialInput{SupervisorID: "ghost"})
	if !errors.Is(err, supervisor.ErrSupervisorNotFound) {
		t.Fatalf("revoke for ghost: %v", err)
	}
	if n, ev := e.rows(t, "supervisor_credentials"), len(e.events(t)); n != 0 || ev != 1 {
		t.Fatalf("after refusals: %d credentials, %d events; want none and the apply's one", n, ev)
	}
}

func TestGetCredential(t *testing.T) {
	t.Parallel()
	e := newCredEnv(t)
	e.put(t, "ops", agentDoc("Bearer t", ""))
	e.put(t, "guard", guard(""))
	_, err := e.getc.Handle(t.Context(), supervisorapp.GetCredentialInput{SupervisorID: "guard"})
	if !errors.Is(err, supervisor.ErrCredentialNotFound) || err.Error() != `supervisor "guard" has no credential; an ADMIN issues one with `+
		`POST /api/supervisors/guard/credential (MCP: create_credential, CLI: yukta supervisors credential create guard)` {
		t.Fatalf("no credential: %v", err)
	}
	issued := e.mustIssue(t, supervisorapp.IssueCredentialInput{SupervisorID: "ops", TTLHours: 48, AllowedAddresses: []string{"203.0.113.9"}})
	c, err := e.getc.Handle(t.Context(), supervisorapp.GetCredentialInput{SupervisorID: "ops"})
	if err != nil || c.Hint() != issued.Token.Hint() || !c.ExpiresAt().Equal(e.now.Add(48*time.Hour)) || c.CreatedBy() != "key:admin" ||
		strings.Join(c.AllowedAddressStrings(), ",") != "203.0.113.9/32" {
		t.Fatalf("metadata: %+v, %v", c, err)
	}
	// A session-limited caller: a supervisor it may not see reads as one
	// that does not exist, word for word.
	_, hidden := e.getc.Handle(t.Context(), supervisorapp.GetCredentialInput{SupervisorID: "ops", Only: []string{"ci"}})
	_, unknown := e.getc.Handle(t.Context(), supervisorapp.GetCredentialInput{SupervisorID: "nope", Only: []string{"ci"}})
	if !errors.Is(hidden, supervisor.ErrSupervisorNotFound) || hidden.Error() != strings.ReplaceAll(unknown.Error(), "nope", "ops") {
		t.Fatalf("hidden %v, unknown %v; want the same not-found answer", hidden, unknown)
	}
	if _, err := e.getc.Handle(t.Context(), supervisorapp.GetCredentialInput{SupervisorID: "guard", Only: []string{"ci"}}); !errors.Is(err, supervisor.ErrCredentialNotFound) {
		t.Fatalf("a visible supervisor without a credential: %v", err)
	}
}
