package executionapp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// Webhook signing (docs/webhooks.md): a WEBHOOK node with a secret accepts
// a request only with X-Yukta-Timestamp (Unix seconds) and
// X-Yukta-Signature "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)),
// the timestamp within WebhookTolerance of the server's clock, and a
// signature not accepted before.
const WebhookTolerance = 5 * time.Minute

// ErrBadSignature is returned when a webhook's signature or timestamp does
// not verify. The text says how to sign, never why a given signature failed.
var ErrBadSignature = fault.Newf(fault.ErrInvalid, "the X-Yukta-Signature or X-Yukta-Timestamp header is missing or wrong; "+
	"send X-Yukta-Timestamp: <Unix seconds> and X-Yukta-Signature: sha256=<hex HMAC-SHA256 of \"<timestamp>.<exact body>\", "+
	"keyed with the WEBHOOK node's secret>, with the timestamp within 5 minutes of the server's clock")

// ErrReplayed is returned for a signed delivery that was accepted before.
var ErrReplayed = fault.Newf(fault.ErrConflict, "this signed webhook delivery was already accepted; "+
	"sign each delivery with a fresh X-Yukta-Timestamp (retries too), and send an Idempotency-Key to make retries start one run")

// DeliveryLedger remembers accepted signed deliveries until they expire, so
// a captured request cannot start a second run.
type DeliveryLedger interface {
	// Record stores a delivery and reports whether it was new.
	Record(ctx context.Context, sessionID, workflowID, signature string, expires time.Time) (bool, error)
}

// StartFromWebhook starts a run through a workflow's WEBHOOK trigger with
// the request body as the payload.
type StartFromWebhook struct {
	start     *StartExecution
	workflows WorkflowReader
	ledger    DeliveryLedger
	now       func() time.Time
}

// NewStartFromWebhook returns the use case.
func NewStartFromWebhook(s *StartExecution, w WorkflowReader, l DeliveryLedger) *StartFromWebhook {
	return &StartFromWebhook{start: s, workflows: w, ledger: l, now: s.now}
}

// WebhookInput is one webhook call.
type WebhookInput struct {
	SessionID, WorkflowID string
	Body                  []byte
	Signature             string
	Timestamp             string
	IdempotencyKey        string
	Actor                 string
}

// Handle verifies the delivery (when the WEBHOOK node has a secret) and starts the run.
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
		return StartResult{}, fault.Newf(fault.ErrNotFound, "workflow %s has no WEBHOOK trigger; add one or start it by hand if it has a MANUAL trigger", in.WorkflowID)
	}
	var at time.Time
	if len(secrets) > 0 {
		var ok bool
		if at, ok = verifyDelivery(in, secrets, uc.now()); !ok {
			return StartResult{}, ErrBadSignature
		}
	}
	var payload any
	if len(bytes.TrimSpace(in.Body)) > 0 {
		if payload, err = jsonvalue.Decode(in.Body, "body"); err != nil {
			return StartResult{}, err
		}
	}
	if len(secrets) > 0 {
		fresh, err := uc.ledger.Record(ctx, in.SessionID, in.WorkflowID, in.Signature, at.Add(WebhookTolerance))
		if err != nil {
			return StartResult{}, err
		}
		if !fresh {
			return StartResult{}, ErrReplayed
		}
	}
	return uc.start.Handle(ctx, StartInput{SessionID: in.SessionID, WorkflowID: in.WorkflowID, Payload: payload,
		IdempotencyKey: in.IdempotencyKey, Trigger: TriggerWebhook, Actor: in.Actor, Channel: "webhook"})
}

// verifyDelivery checks the timestamp window and the signature over
// "<timestamp>.<body>" against every secret, in constant time per secret.
func verifyDelivery(in WebhookInput, secrets []string, now time.Time) (time.Time, bool) {
	sec, err := strconv.ParseInt(in.Timestamp, 10, 64)
	if err != nil || len(in.Timestamp) > 12 {
		return time.Time{}, false
	}
	at := time.Unix(sec, 0)
	if d := now.Sub(at); d > WebhookTolerance || d < -WebhookTolerance {
		return time.Time{}, false
	}
	got, ok := strings.CutPrefix(in.Signature, "sha256=")
	if !ok {
		return time.Time{}, false
	}
	sig, err := hex.DecodeString(got)
	if err != nil {
		return time.Time{}, false
	}
	for _, s := range secrets {
		m := hmac.New(sha256.New, []byte(s))
		m.Write([]byte(in.Timestamp))
		m.Write([]byte{'.'})
		m.Write(in.Body)
		if hmac.Equal(m.Sum(nil), sig) {
			return at, true
		}
	}
	return time.Time{}, false
}
