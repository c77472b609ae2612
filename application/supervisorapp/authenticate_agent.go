package supervisorapp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// ErrAgentUnauthenticated is what every refused agent API credential
// matches, whatever the reason: the agent API answers it with 401 and the
// same words, so a caller learns nothing about which tokens, supervisors
// or addresses exist. The reason is on the *AgentRefusal, for the server
// log. It wraps fault.ErrForbidden so that an edge that does not know it
// still refuses; the agent API checks it first.
var ErrAgentUnauthenticated = fmt.Errorf("supervisorapp: supervisor credential refused: %w", fault.ErrForbidden)

// AgentRefusalReason says why a credential was refused; only the server
// log shows it.
type AgentRefusalReason string

// The refusal reasons.
const (
	// RefusedMalformed: not a token (prefix, length, alphabet or
	// checksum); nothing was looked up.
	RefusedMalformed AgentRefusalReason = "malformed"
	// RefusedUnknown: no stored credential has this token (never issued,
	// rotated or revoked).
	RefusedUnknown AgentRefusalReason = "unknown"
	// RefusedExpired: the credential's expiresAt has passed.
	RefusedExpired AgentRefusalReason = "expired"
	// RefusedAddress: the request came from outside allowedAddresses.
	RefusedAddress AgentRefusalReason = "address"
	// RefusedNoSupervisor: the supervisor is gone (deleted while the
	// request was on its way; its credential went with it).
	RefusedNoSupervisor AgentRefusalReason = "no-supervisor"
	// RefusedDisabled: the supervisor is disabled.
	RefusedDisabled AgentRefusalReason = "disabled"
)

// agentRefusedText is the one sentence of every refusal.
const agentRefusedText = "the supervisor credential is not valid for this request; an ADMIN issues a new one with POST /api/supervisors/{id}/credential"

// AgentRefusal is a refused credential. Its Error is the same for every
// reason; Reason, SupervisorID and Hint (empty when no stored credential
// matched) are for the server log. It never holds the token.
type AgentRefusal struct {
	Reason       AgentRefusalReason
	SupervisorID string
	Hint         string
}

func (e *AgentRefusal) Error() string { return agentRefusedText }

// Unwrap makes errors.Is(err, ErrAgentUnauthenticated) true.
func (e *AgentRefusal) Unwrap() error { return ErrAgentUnauthenticated }

// usedResolution is how stale lastUsedAt may get: an agent's requests
// write it at most once a minute, not on each of its 600.
const usedResolution = time.Minute

// AuthenticateAgent decides who an agent API request is: the supervisor
// whose credential it presents. It is the one check the agent API makes
// before anything else.
type AuthenticateAgent struct {
	creds CredentialReader
	sups  Reader
	now   func() time.Time
}

// NewAuthenticateAgent returns the use case.
func NewAuthenticateAgent(creds CredentialReader, sups Reader, now func() time.Time) *AuthenticateAgent {
	return &AuthenticateAgent{creds: creds, sups: sups, now: now}
}

// AuthenticateAgentInput is what a request presents.
type AuthenticateAgentInput struct {
	// Token is the bearer token, as sent.
	Token string
	// Remote is the address the request came from: the connection's
	// peer, or the X-Forwarded-For address only when the peer is a
	// configured trusted proxy. The zero Addr passes only a credential
	// without allowedAddresses.
	Remote netip.Addr
}

// AgentIdentity is an authenticated agent: its supervisor (secret settings
// masked) and the credential it used.
type AgentIdentity struct {
	Supervisor Summary
	Credential supervisor.Credential
}

// Handle checks the token's format and checksum (no lookup for a
// malformed one), finds its credential by the token's hash, checks expiry
// and allowedAddresses, then that the supervisor exists and is enabled. A
// refusal is an *AgentRefusal matching ErrAgentUnauthenticated; a storage
// failure is returned as it is (fault.ErrUnavailable), never as a
// refusal, so an outage does not read as a wrong token. The credential's
// lastUsedAt is moved forward at most once a minute.
func (uc *AuthenticateAgent) Handle(ctx context.Context, in AuthenticateAgentInput) (AgentIdentity, error) {
	id, err := uc.check(ctx, in.Token, &in.Remote)
	if err != nil {
		return AgentIdentity{}, err
	}
	if now := uc.now(); now.Sub(id.Credential.LastUsedAt()) >= usedResolution {
		if err := uc.creds.MarkCredentialUsed(ctx, id.Credential.Hash(), now.UTC()); err != nil {
			return AgentIdentity{}, fmt.Errorf("authenticate agent: %w", err)
		}
	}
	return id, nil
}

// Recheck asks again, for a request that is still open (an SSE stream, a
// long poll), whether its token still opens the agent API: the credential
// is still stored under the token's hash (not rotated or revoked) and has
// not expired, and its supervisor exists and is enabled. Both are read
// from the database, so a change made through any instance is seen. The
// address is not checked again (it was when the request came, and cannot
// change while it is open) and lastUsedAt is not written. The answer is
// the supervisor as stored now (secret settings masked), so a reader can
// tell that its owns or anything else changed (UpdatedAt); a refusal is
// an *AgentRefusal, as for Handle.
func (uc *AuthenticateAgent) Recheck(ctx context.Context, token string) (Summary, error) {
	id, err := uc.check(ctx, token, nil)
	return id.Supervisor, err
}

// check is Handle without the last-use write; remote nil skips the
// address check.
func (uc *AuthenticateAgent) check(ctx context.Context, token string, remote *netip.Addr) (AgentIdentity, error) {
	hash, err := supervisor.ParseToken(token)
	if err != nil {
		return AgentIdentity{}, &AgentRefusal{Reason: RefusedMalformed}
	}
	c, err := uc.creds.CredentialByHash(ctx, hash)
	if errors.Is(err, supervisor.ErrCredentialNotFound) {
		return AgentIdentity{}, &AgentRefusal{Reason: RefusedUnknown}
	}
	if err != nil {
		return AgentIdentity{}, fmt.Errorf("authenticate agent: %w", err)
	}
	refuse := func(r AgentRefusalReason) error {
		return &AgentRefusal{Reason: r, SupervisorID: c.SupervisorID(), Hint: c.Hint()}
	}
	now := uc.now()
	switch {
	case c.Expired(now):
		return AgentIdentity{}, refuse(RefusedExpired)
	case remote != nil && !c.Allows(*remote):
		return AgentIdentity{}, refuse(RefusedAddress)
	}
	sm, err := uc.sups.Supervisor(ctx, c.SupervisorID())
	if errors.Is(err, supervisor.ErrSupervisorNotFound) {
		return AgentIdentity{}, refuse(RefusedNoSupervisor)
	}
	if err != nil {
		return AgentIdentity{}, fmt.Errorf("authenticate agent: %w", err)
	}
	if !sm.Supervisor.Enabled() {
		return AgentIdentity{}, refuse(RefusedDisabled)
	}
	sm.Supervisor = sm.Supervisor.Masked()
	return AgentIdentity{Supervisor: sm, Credential: c}, nil
}
