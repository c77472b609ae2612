package httpapi

import (
	"context"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
)

// GetVersion answers GET /api/version with the build of this binary.
func (h *handlers) GetVersion(context.Context, restapi.GetVersionRequestObject) (restapi.GetVersionResponseObject, error) {
	b := h.uc.Build
	return restapi.GetVersion200JSONResponse{Version: b.Version, Revision: b.Revision, RevisionTime: b.RevisionTime,
		Modified: b.Modified, GoVersion: b.GoVersion, Platform: b.Platform}, nil
}
