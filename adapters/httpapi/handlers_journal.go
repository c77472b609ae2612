package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"

	"github.com/yukta/yukta/adapters/httpapi/restapi"
	"github.com/yukta/yukta/application/journalapp"
	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
)

// JournalUseCases are the observer journal calls the REST handlers make.
// When they are not set the journal routes answer 404.
type JournalUseCases struct {
	Export interface {
		Handle(ctx context.Context, sessionID, executionID string) ([][]byte, error)
	}
	Verify interface {
		Handle(ctx context.Context, sessionID, executionID string) (journalapp.Verification, error)
	}
	Project interface {
		Handle(ctx context.Context, sessionID, executionID string) (journalapp.ProjectionView, error)
	}
	PublicKey interface {
		Handle(ctx context.Context) (journalapp.PublicKeys, error)
	}
}

func (j JournalUseCases) enabled() error {
	if j.Export == nil || j.Verify == nil || j.Project == nil || j.PublicKey == nil {
		return fault.Newf(fault.ErrNotFound, "the observer journal is not enabled on this server")
	}
	return nil
}

func (h *handlers) ExportJournal(ctx context.Context, req restapi.ExportJournalRequestObject) (restapi.ExportJournalResponseObject, error) {
	if err := h.uc.Journal.enabled(); err != nil {
		return nil, err
	}
	lines, err := h.uc.Journal.Export.Handle(ctx, req.SessionId, req.ExecutionId)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return restapi.ExportJournal200ApplicationxNdjsonResponse{Body: &b, ContentLength: int64(b.Len())}, nil
}

func (h *handlers) VerifyJournal(ctx context.Context, req restapi.VerifyJournalRequestObject) (restapi.VerifyJournalResponseObject, error) {
	if err := h.uc.Journal.enabled(); err != nil {
		return nil, err
	}
	v, err := h.uc.Journal.Verify.Handle(ctx, req.SessionId, req.ExecutionId)
	if err != nil {
		return nil, err
	}
	return restapi.VerifyJournal200JSONResponse{Result: restapi.JournalVerificationResult(v.Result.Result), Sequence: v.Sequence,
		ChainTip: v.ChainTip, FirstBadSequence: v.FirstBadSequence, Reason: string(v.Reason), Detail: v.Detail, LagEvents: v.LagEvents}, nil
}

func (h *handlers) GetExecutionProjection(ctx context.Context, req restapi.GetExecutionProjectionRequestObject) (restapi.GetExecutionProjectionResponseObject, error) {
	if err := h.uc.Journal.enabled(); err != nil {
		return nil, err
	}
	p, err := h.uc.Journal.Project.Handle(ctx, req.SessionId, req.ExecutionId)
	if err != nil {
		return nil, err
	}
	return projectionResponse{ExecutionID: p.ExecutionID, Sequence: p.Sequence, ChainTip: p.ChainTip, Run: p.Run, Nodes: p.Nodes,
		Spend: p.Spend}, nil
}

// projectionResponse writes the domain projection as it is: its JSON names
// are the JournalProjection schema's, and absent values stay absent.
type projectionResponse struct {
	ExecutionID string             `json:"executionId"`
	Sequence    int64              `json:"sequence"`
	ChainTip    string             `json:"chainTip,omitempty"`
	Run         journal.RunView    `json:"run"`
	Nodes       []journal.NodeView `json:"nodes"`
	Spend       execution.Spend    `json:"spend"`
}

func (p projectionResponse) VisitGetExecutionProjectionResponse(w http.ResponseWriter) error {
	if p.Nodes == nil {
		p.Nodes = []journal.NodeView{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(p)
}

func (h *handlers) GetJournalPublicKey(ctx context.Context, _ restapi.GetJournalPublicKeyRequestObject) (restapi.GetJournalPublicKeyResponseObject, error) {
	if err := h.uc.Journal.enabled(); err != nil {
		return nil, err
	}
	pk, err := h.uc.Journal.PublicKey.Handle(ctx)
	if err != nil {
		return nil, err
	}
	out := restapi.GetJournalPublicKey200JSONResponse{Algorithm: restapi.JournalPublicKeyAlgorithmEd25519,
		PublicKey: base64.StdEncoding.EncodeToString(pk.Current), KeyId: journal.KeyID(pk.Current), Keys: []restapi.JournalSigningKey{}}
	for _, k := range pk.Keys {
		sk := restapi.JournalSigningKey{KeyId: k.KeyID, Algorithm: restapi.JournalSigningKeyAlgorithmEd25519,
			PublicKey: base64.StdEncoding.EncodeToString(k.PublicKey), Status: restapi.JournalSigningKeyStatus(k.Status), RegisteredAt: k.RegisteredAt.UTC()}
		if !k.RetiredAt.IsZero() {
			sk.RetiredAt = k.RetiredAt.UTC() // omitted while zero
		}
		out.Keys = append(out.Keys, sk)
	}
	return out, nil
}
