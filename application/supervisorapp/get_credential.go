package supervisorapp

import (
	"context"
	"errors"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// GetCredential reads the metadata of a supervisor's credential: its hint,
// when it was issued, by whom, when it expires, where it may be used from
// and when it was last used. The token is not stored, so no read can
// return it.
type GetCredential struct {
	sups  Reader
	creds CredentialReader
}

// NewGetCredential returns the use case.
func NewGetCredential(sups Reader, creds CredentialReader) *GetCredential {
	return &GetCredential{sups: sups, creds: creds}
}

// GetCredentialInput names a supervisor and whom it is read for.
type GetCredentialInput struct {
	SupervisorID string
	// Only, when not nil, is the caller's session list: a supervisor it
	// may not see (Visible) reads as one that does not exist.
	Only []string
}

// Handle returns the credential, or an error matching
// supervisor.ErrSupervisorNotFound (no such supervisor, or hidden) or
// supervisor.ErrCredentialNotFound (the supervisor has none), each worded
// with the next step.
func (uc *GetCredential) Handle(ctx context.Context, in GetCredentialInput) (supervisor.Credential, error) {
	sm, err := uc.sups.Supervisor(ctx, in.SupervisorID)
	if err != nil {
		return supervisor.Credential{}, err
	}
	if !Visible(sm.Supervisor, in.Only) {
		return supervisor.Credential{}, NotFound(in.SupervisorID)
	}
	c, err := uc.creds.Credential(ctx, in.SupervisorID)
	if errors.Is(err, supervisor.ErrCredentialNotFound) {
		return supervisor.Credential{}, NoCredential(in.SupervisorID)
	}
	return c, err
}

// NoCredential is the error for a supervisor without a credential, worded
// once for every door. It matches supervisor.ErrCredentialNotFound.
func NoCredential(id string) error {
	return fault.Newf(supervisor.ErrCredentialNotFound, "supervisor %q has no credential; an ADMIN issues one with POST /api/supervisors/%s/credential "+
		"(MCP: create_credential, CLI: yukta supervisors credential create %s)", id, id, id)
}
