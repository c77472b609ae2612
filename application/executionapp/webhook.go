package executionapp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// ErrBadSignature is returned when a webhook's signature does not verify.
var ErrBadSignature = fault.Newf(fault.ErrInvalid, "the X-Yukta-Signature header is missing or wrong; send sha256=<hex HMAC-SHA256 of the exact body, keyed with the WEBHOOK node's secret>")

// StartFromWebhook starts a run through a workflow's WEBHOOK trigger with
// the request body as the payload.
type StartFromWebhook struct {
	start     *StartExecution
	workflows WorkflowReader
}

// NewStartFromWebhook returns the use case.
func NewStartFromWebhook(s *StartExecution, w WorkflowReader) *StartFromWebhook {
	return &StartFromWebhook{start: s, workflows: w}
}

// WebhookInput is one webhook call.
type WebhookInput struct {
	SessionID, WorkflowID string
	Body                  []byte
	Signature             string
	IdempotencyKey        string
	Actor                 string
}

// Handle verifies the signature (when the WEBHOOK node has a secret) and starts the run.
func (uc *StartFromWebhook) Handle(ctx context.Context, in WebhookInput) (StartResult, error) {
	w, err := uc.workflows.Workflow(ctx, in.SessionID, in.WorkflowID)
	if err != nil {
		return StartResult{}, err
	}
	var secrets []string
	hooks := 0
	for _, n := range w.Nodes() {
		if n.Type() != string(TriggerWebhook) {
			continue
		}
		hooks++
		if s, ok := n.Config()["secret"].(string); ok && s != "" {
			secrets = append(secrets, s)
		}
	}
	if hooks == 0 {
		return StartResult{}, fault.Newf(fault.ErrNotFound, "workflow %s has no WEBHOOK trigger; add one or start it with POST /api/sessions/%s/workflows/%s/executions", in.WorkflowID, in.SessionID, in.WorkflowID)
	}
	if len(secrets) > 0 && !signed(in.Body, in.Signature, secrets) {
		return StartResult{}, ErrBadSignature
	}
	var payload any
	if len(bytes.TrimSpace(in.Body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(in.Body))
		dec.UseNumber()
		if err := dec.Decode(&payload); err != nil || dec.More() {
			return StartResult{}, &fault.ValidationError{Subject: "webhook body", Violations: []fault.Violation{{
				Path: "body", Message: "must be one JSON value (it becomes the run's payload)"}}}
		}
	}
	return uc.start.Handle(ctx, StartInput{SessionID: in.SessionID, WorkflowID: in.WorkflowID, Payload: payload,
		IdempotencyKey: in.IdempotencyKey, Trigger: TriggerWebhook, Actor: in.Actor, Channel: "webhook"})
}

func signed(body []byte, header string, secrets []string) bool {
	got, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		m.Write(body)
		if hmac.Equal(m.Sum(nil), sig) {
			return true
		}
	}
	return false
}
