package httpapi

import (
	"context"
	"strings"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/supervisorapp"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/supervisor"
)

// CredentialUseCases are the supervisor credential calls of the REST
// handlers (POST, GET and DELETE /api/supervisors/{id}/credential).
type CredentialUseCases struct {
	Issue interface {
		Handle(context.Context, supervisorapp.IssueCredentialInput) (supervisorapp.IssuedCredential, error)
	}
	Get interface {
		Handle(context.Context, supervisorapp.GetCredentialInput) (supervisor.Credential, error)
	}
	Revoke interface {
		Handle(context.Context, supervisorapp.RevokeCredentialInput) (supervisor.Credential, error)
	}
}

func (c CredentialUseCases) enabled() error {
	if c.Issue == nil || c.Get == nil || c.Revoke == nil {
		return fault.Newf(fault.ErrNotFound, "supervisor credentials are not enabled on this server")
	}
	return nil
}

func (h *handlers) IssueCredential(ctx context.Context, req restapi.IssueCredentialRequestObject) (restapi.IssueCredentialResponseObject, error) {
	uc := h.uc.Supervisors.Credentials
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	res, err := uc.Issue.Handle(ctx, supervisorapp.IssueCredentialInput{SupervisorID: req.SupervisorId, TTLHours: req.Params.TtlHours,
		AllowedAddresses: splitAddresses(req.Params.AllowedAddresses), Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	c := res.Credential
	return restapi.IssueCredential201JSONResponse{Headers: restapi.IssueCredential201ResponseHeaders{CacheControl: "no-store"},
		Body: restapi.IssuedCredential{Token: res.Token.Reveal(), Rotated: res.Rotated, SupervisorId: c.SupervisorID(), Hint: c.Hint(),
			CreatedAt: c.CreatedAt(), ExpiresAt: c.ExpiresAt(), AllowedAddresses: c.AllowedAddressStrings(), CreatedBy: c.CreatedBy(),
			CreatedVia: c.CreatedVia()}}, nil
}

func (h *handlers) GetCredential(ctx context.Context, req restapi.GetCredentialRequestObject) (restapi.GetCredentialResponseObject, error) {
	uc := h.uc.Supervisors.Credentials
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	c, err := uc.Get.Handle(ctx, supervisorapp.GetCredentialInput{SupervisorID: req.SupervisorId, Only: limitedTo(ctx)})
	if err != nil {
		return nil, err
	}
	return restapi.GetCredential200JSONResponse(credentialToAPI(c)), nil
}

func (h *handlers) RevokeCredential(ctx context.Context, req restapi.RevokeCredentialRequestObject) (restapi.RevokeCredentialResponseObject, error) {
	uc := h.uc.Supervisors.Credentials
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	if _, err := uc.Revoke.Handle(ctx, supervisorapp.RevokeCredentialInput{SupervisorID: req.SupervisorId, Actor: actor(ctx),
		Channel: channel(string(req.Params.YuktaChannel))}); err != nil {
		return nil, err
	}
	return restapi.RevokeCredential204Response{}, nil
}

// credentialToAPI writes a credential's metadata; there is no token to
// write.
func credentialToAPI(c supervisor.Credential) restapi.SupervisorCredential {
	return restapi.SupervisorCredential{SupervisorId: c.SupervisorID(), Hint: c.Hint(), CreatedAt: c.CreatedAt(), ExpiresAt: c.ExpiresAt(),
		AllowedAddresses: c.AllowedAddressStrings(), CreatedBy: c.CreatedBy(), CreatedVia: c.CreatedVia(), LastUsedAt: c.LastUsedAt()}
}

// splitAddresses reads the comma-separated allowedAddresses parameter;
// spaces around an entry are dropped, an empty parameter is no entry.
func splitAddresses(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}
