package httpapi

import (
	"context"

	"github.com/yukta/yukta/adapters/authn"
	"github.com/yukta/yukta/adapters/httpapi/restapi"
)

// GetVersion answers GET /api/version with the build of this binary.
func (h *handlers) GetVersion(context.Context, restapi.GetVersionRequestObject) (restapi.GetVersionResponseObject, error) {
	b := h.uc.Build
	return restapi.GetVersion200JSONResponse{Version: b.Version, Revision: b.Revision, RevisionTime: b.RevisionTime,
		Modified: b.Modified, GoVersion: b.GoVersion, Platform: b.Platform}, nil
}

// GetSelf answers GET /api/self with the caller as the key check resolved
// it: the console signs in with it and offers what the role allows.
func (h *handlers) GetSelf(ctx context.Context, _ restapi.GetSelfRequestObject) (restapi.GetSelfResponseObject, error) {
	p := authn.PrincipalFrom(ctx)
	name := p.Name()
	if p.Anonymous() {
		name = "anonymous"
	}
	out := restapi.GetSelf200JSONResponse{Name: name, Role: restapi.SelfRole(p.Role().String()), Actor: p.Actor(), Open: p.Anonymous()}
	if p.Limited() {
		out.Sessions = p.Sessions()
	}
	return out, nil
}
