package supervisorapp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// RevokeCredential deletes a supervisor's credential (an ADMIN's act): its
// token works on no request after the commit.
type RevokeCredential struct {
	tx  CredentialTransactor
	now func() time.Time
}

// NewRevokeCredential returns the use case.
func NewRevokeCredential(tx CredentialTransactor, now func() time.Time) *RevokeCredential {
	return &RevokeCredential{tx: tx, now: now}
}

// RevokeCredentialInput names the supervisor and who revokes its
// credential.
type RevokeCredentialInput struct {
	SupervisorID   string
	Actor, Channel string
}

// Handle deletes the credential and appends a SupervisorCredentialRevoked
// event in one transaction, and returns the credential it revoked. A
// supervisor that does not exist is supervisor.ErrSupervisorNotFound; one
// without a credential supervisor.ErrCredentialNotFound (NoCredential).
func (uc *RevokeCredential) Handle(ctx context.Context, in RevokeCredentialInput) (supervisor.Credential, error) {
	var revoked supervisor.Credential
	err := uc.tx.WithinTx(ctx, func(ctx context.Context, st CredentialStores) error {
		if _, err := st.Supervisors.GetForUpdate(ctx, in.SupervisorID); err != nil {
			return err
		}
		c, err := st.Credentials.Get(ctx, in.SupervisorID)
		if errors.Is(err, supervisor.ErrCredentialNotFound) {
			return NoCredential(in.SupervisorID)
		}
		if err != nil {
			return err
		}
		if err := st.Credentials.Delete(ctx, in.SupervisorID); err != nil {
			return err
		}
		revoked = c
		return st.Audit.SupervisorChanged(ctx, EventCredentialRevoked, in.SupervisorID,
			Change{At: uc.now().UTC(), Actor: in.Actor, Channel: in.Channel}, map[string]any{"issuedAt": c.CreatedAt().Format(time.RFC3339Nano)})
	})
	if err != nil {
		return supervisor.Credential{}, fmt.Errorf("revoke credential of supervisor %q: %w", in.SupervisorID, err)
	}
	return revoked, nil
}
