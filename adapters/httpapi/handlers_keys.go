package httpapi

import (
	"time"

	"context"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/accessapp"
	"github.com/yukta/yukta/domain/access"
	"github.com/yukta/yukta/domain/fault"
)

// KeyUseCases are the stored API key calls of the REST handlers (/api/keys).
type KeyUseCases struct {
	Create interface {
		Handle(context.Context, accessapp.CreateAPIKeyInput) (accessapp.IssuedAPIKey, error)
	}
	List interface {
		Handle(context.Context) ([]accessapp.ListedKey, error)
	}
	Get interface {
		Handle(context.Context, string) (access.APIKey, error)
	}
	Rotate interface {
		Handle(context.Context, accessapp.RotateAPIKeyInput) (accessapp.IssuedAPIKey, error)
	}
	Revoke interface {
		Handle(context.Context, accessapp.RevokeAPIKeyInput) (access.APIKey, error)
	}
	Expire interface {
		Handle(context.Context, accessapp.SetAPIKeyExpiryInput) (access.APIKey, error)
	}
}

func (k KeyUseCases) enabled() error {
	if k.Create == nil || k.List == nil || k.Get == nil || k.Rotate == nil || k.Revoke == nil || k.Expire == nil {
		return fault.Newf(fault.ErrNotFound, "stored API keys are not enabled on this server")
	}
	return nil
}

func (h *handlers) CreateAPIKey(ctx context.Context, req restapi.CreateAPIKeyRequestObject) (restapi.CreateAPIKeyResponseObject, error) {
	uc := h.uc.Keys
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	b := req.Body
	res, err := uc.Create.Handle(ctx, accessapp.CreateAPIKeyInput{Spec: access.APIKeySpec{Name: b.Name, Role: b.Role, Sessions: b.Sessions,
		Queues: b.Queues, ExpiresAt: b.ExpiresAt, TTL: b.Ttl}, Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	return restapi.CreateAPIKey201JSONResponse{Headers: restapi.CreateAPIKey201ResponseHeaders{CacheControl: "no-store"}, Body: issuedKeyToAPI(res)}, nil
}

func (h *handlers) ListAPIKeys(ctx context.Context, _ restapi.ListAPIKeysRequestObject) (restapi.ListAPIKeysResponseObject, error) {
	uc := h.uc.Keys
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	keys, err := uc.List.Handle(ctx)
	if err != nil {
		return nil, err
	}
	out := restapi.APIKeyList{Items: make([]restapi.APIKey, 0, len(keys))}
	for _, k := range keys {
		if k.Source == accessapp.SourceStored {
			out.Items = append(out.Items, keyToAPI(k.Stored))
			continue
		}
		out.Items = append(out.Items, restapi.APIKey{Name: k.Principal.Name(), Role: restapi.APIKeyRole(k.Principal.Role().String()),
			Sessions: k.Principal.Sessions(), Queues: k.Principal.Queues(), Source: restapi.APIKeySource(k.Source)})
	}
	return restapi.ListAPIKeys200JSONResponse(out), nil
}

func (h *handlers) GetAPIKey(ctx context.Context, req restapi.GetAPIKeyRequestObject) (restapi.GetAPIKeyResponseObject, error) {
	uc := h.uc.Keys
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	k, err := uc.Get.Handle(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return restapi.GetAPIKey200JSONResponse(keyToAPI(k)), nil
}

func (h *handlers) RotateAPIKey(ctx context.Context, req restapi.RotateAPIKeyRequestObject) (restapi.RotateAPIKeyResponseObject, error) {
	uc := h.uc.Keys
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	res, err := uc.Rotate.Handle(ctx, accessapp.RotateAPIKeyInput{Name: req.Name, Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	return restapi.RotateAPIKey200JSONResponse{Headers: restapi.RotateAPIKey200ResponseHeaders{CacheControl: "no-store"}, Body: issuedKeyToAPI(res)}, nil
}

func (h *handlers) RevokeAPIKey(ctx context.Context, req restapi.RevokeAPIKeyRequestObject) (restapi.RevokeAPIKeyResponseObject, error) {
	uc := h.uc.Keys
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	if _, err := uc.Revoke.Handle(ctx, accessapp.RevokeAPIKeyInput{Name: req.Name, Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel))}); err != nil {
		return nil, err
	}
	return restapi.RevokeAPIKey204Response{}, nil
}

func (h *handlers) SetAPIKeyExpiry(ctx context.Context, req restapi.SetAPIKeyExpiryRequestObject) (restapi.SetAPIKeyExpiryResponseObject, error) {
	uc := h.uc.Keys
	if err := uc.enabled(); err != nil {
		return nil, err
	}
	k, err := uc.Expire.Handle(ctx, accessapp.SetAPIKeyExpiryInput{Name: req.Name, ExpiresAt: req.Body.ExpiresAt, TTL: req.Body.Ttl,
		Actor: actor(ctx), Channel: channel(string(req.Params.YuktaChannel))})
	if err != nil {
		return nil, err
	}
	return restapi.SetAPIKeyExpiry200JSONResponse(keyToAPI(k)), nil
}

// keyToAPI writes a stored key's metadata; there is no secret to write.
func keyToAPI(k access.APIKey) restapi.APIKey {
	return restapi.APIKey{Name: k.Name(), Role: restapi.APIKeyRole(k.Role().String()), Sessions: k.Sessions(), Queues: k.Queues(), Source: accessapp.SourceStored,
		Hint: k.Hint(), CreatedAt: k.CreatedAt(), CreatedBy: k.CreatedBy(), CreatedVia: k.CreatedVia(), ExpiresAt: k.ExpiresAt(),
		Expired: k.Expired(time.Now()), RotatedAt: k.RotatedAt(), RotatedBy: k.RotatedBy(), RotatedVia: k.RotatedVia(),
		LastUsedAt: k.LastUsedAt(), LastUsedFrom: k.LastUsedFrom()}
}

// issuedKeyToAPI is keyToAPI with the secret, shown this once, and the
// note of a key that closed an open server.
func issuedKeyToAPI(res accessapp.IssuedAPIKey) restapi.IssuedAPIKey {
	k := keyToAPI(res.Key)
	out := restapi.IssuedAPIKey{Name: k.Name, Role: restapi.IssuedAPIKeyRole(k.Role), Sessions: k.Sessions, Queues: k.Queues, Source: restapi.IssuedAPIKeySource(k.Source),
		Hint: k.Hint, CreatedAt: k.CreatedAt, CreatedBy: k.CreatedBy, CreatedVia: k.CreatedVia, ExpiresAt: k.ExpiresAt, Expired: k.Expired,
		RotatedAt: k.RotatedAt, RotatedBy: k.RotatedBy, RotatedVia: k.RotatedVia, Secret: res.Token.Reveal()}
	if res.ClosedOpenMode {
		out.Note = accessapp.ClosedOpenModeNote
	}
	return out
}
