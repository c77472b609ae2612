package supervisorapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/yukta/yukta/domain/supervisor"
)

// IssueCredential issues or rotates the agent API credential of a
// supervisor (an ADMIN's act). The new token is returned once; the store
// keeps its hash. Issuing again replaces the earlier credential in the
// same transaction, so the earlier token works on no request after the
// commit.
type IssueCredential struct {
	tx     CredentialTransactor
	random io.Reader
	now    func() time.Time
}

// NewIssueCredential returns the use case. random is where tokens' bits
// come from: crypto/rand.Reader.
func NewIssueCredential(tx CredentialTransactor, random io.Reader, now func() time.Time) *IssueCredential {
	return &IssueCredential{tx: tx, random: random, now: now}
}

// IssueCredentialInput names the supervisor, the credential's rules and who
// issues it.
type IssueCredentialInput struct {
	SupervisorID string
	// TTLHours is the credential's life, 1 to 8760; 0 means 720 (30 days).
	TTLHours int
	// AllowedAddresses are CIDRs the agent may connect from; empty: any.
	AllowedAddresses []string
	Actor, Channel   string
}

// IssuedCredential is a new credential and its token, shown this once.
type IssuedCredential struct {
	Token      supervisor.Token
	Credential supervisor.Credential
	// Rotated reports whether it replaced an earlier credential.
	Rotated bool
}

// Handle validates the input (every problem at once), draws the token and,
// in one transaction, checks that the supervisor exists, stores the
// credential in place of any earlier one and appends a
// SupervisorCredentialIssued event. An unknown supervisor is
// supervisor.ErrSupervisorNotFound.
func (uc *IssueCredential) Handle(ctx context.Context, in IssueCredentialInput) (IssuedCredential, error) {
	// Drawn once, outside the transaction: a retried transaction stores the
	// token the caller gets.
	c, tok, err := supervisor.IssueCredential(in.SupervisorID, supervisor.CredentialSpec{TTLHours: in.TTLHours, AllowedAddresses: in.AllowedAddresses},
		uc.random, uc.now(), in.Actor, in.Channel)
	if err != nil {
		return IssuedCredential{}, err
	}
	var rotated bool
	err = uc.tx.WithinTx(ctx, func(ctx context.Context, st CredentialStores) error {
		if _, err := st.Supervisors.GetForUpdate(ctx, in.SupervisorID); err != nil {
			return err
		}
		switch _, err := st.Credentials.Get(ctx, in.SupervisorID); {
		case err == nil:
			rotated = true
		case errors.Is(err, supervisor.ErrCredentialNotFound):
			rotated = false
		default:
			return err
		}
		if err := st.Credentials.Put(ctx, c); err != nil {
			return err
		}
		// What a reader of the stream needs to know; never the token, its
		// hash or its hint.
		return st.Audit.SupervisorChanged(ctx, EventCredentialIssued, in.SupervisorID,
			Change{At: c.CreatedAt(), Actor: in.Actor, Channel: in.Channel}, map[string]any{
				"rotated": rotated, "expiresAt": c.ExpiresAt().Format(time.RFC3339Nano), "allowedAddresses": c.AllowedAddressStrings()})
	})
	if err != nil {
		return IssuedCredential{}, fmt.Errorf("issue credential of supervisor %q: %w", in.SupervisorID, err)
	}
	return IssuedCredential{Token: tok, Credential: c, Rotated: rotated}, nil
}
