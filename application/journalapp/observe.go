package journalapp

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yukta/yukta/domain/execution"
	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/journal"
)

// The outbox event types that are decisions: operator commands, with their
// actor, channel and cause, and supervisor directives that are not control
// commands or were refused (the directive intake's DirectiveApplied and
// DirectiveRejected), and an ADMIN's end of a supervisor's hold
// (HoldReleased). Every other event is an event record.
var decisionTypes = map[string]bool{"CommandAccepted": true, "CommandApplied": true, "CommandRejected": true,
	"DirectiveApplied": true, "DirectiveRejected": true, "ReviewRequested": true, "ReviewDecided": true, "HoldReleased": true}

// eventHoldReleased is the decision of an ADMIN (or a holder's deletion)
// ending a supervisor's hold.
const eventHoldReleased = "HoldReleased"

// reviewTypes are the decisions of reviews: a supervisor asked for its
// verdict, and each verdict, approval, default and application.
var reviewTypes = map[string]bool{"ReviewRequested": true, "ReviewDecided": true}

// directiveTypes are the decisions of the directive intake.
var directiveTypes = map[string]bool{"DirectiveApplied": true, "DirectiveRejected": true}

const eventExecutionStatusChanged = "ExecutionStatusChanged"

// ObserverConfig tunes the observer.
type ObserverConfig struct {
	// Batch is how many outbox events one transaction consumes (default 1000).
	Batch int
	// Poll is how long the observer waits when it has caught up (default 50 ms).
	Poll time.Duration
	// MaxBackoff caps the wait after a failed round (default 5 s).
	MaxBackoff time.Duration
}

// ObserverStats are running totals since the observer was made.
type ObserverStats struct {
	Rounds      int64 // transactions that consumed at least one event
	Events      int64 // outbox events consumed
	Records     int64 // records appended
	Checkpoints int64 // checkpoints signed
}

// Observer turns the outbox into journals. One round (Step) is one
// transaction: lock the position, read the next committed events, append one
// batch of records per execution (serialized per execution, gapless, each
// linked to the one before), sign a checkpoint for every execution that has
// settled, and move the position, all or nothing. An event already journaled
// (by source seq) is skipped, so a replay appends nothing. Several instances
// may run observers on one database: the position's row lock lets one work
// at a time.
type Observer struct {
	tx      Transactor
	key     ed25519.PrivateKey
	pub     ed25519.PublicKey
	now     func() time.Time
	cfg     ObserverConfig
	onError func(error)
	audit   AuditSink

	lag   atomic.Int64
	mu    sync.Mutex
	stats ObserverStats
}

// NewObserver returns the observer. key signs checkpoints; onError hears
// about failed rounds (the observer retries them).
func NewObserver(tx Transactor, key ed25519.PrivateKey, now func() time.Time, cfg ObserverConfig, onError func(error)) (*Observer, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fault.Newf(fault.ErrInvalid, "journal observer: the signing key is not an ed25519 private key")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	if onError == nil {
		onError = func(error) {}
	}
	o := &Observer{tx: tx, key: key, pub: key.Public().(ed25519.PublicKey), now: now, cfg: cfg, onError: onError}
	o.lag.Store(-1)
	return o, nil
}

// UseAuditSink makes the observer hand every round's records to sink before
// the round commits (see AuditSink). Call it before Run.
func (o *Observer) UseAuditSink(sink AuditSink) { o.audit = sink }

func auditRecords(rs []NewRecord) []AuditRecord {
	out := make([]AuditRecord, len(rs))
	for i, r := range rs {
		out[i] = AuditRecord{SessionID: r.SessionID, ExecutionID: r.Record.ExecutionID, Sequence: r.Record.Sequence,
			Kind: string(r.Record.Kind), Digest: r.Record.Digest, Line: r.Line}
	}
	return out
}

// Lag is how many outbox events were waiting after the observer's last
// round (-1 before the first). It is the observer's health metric: it grows
// while the observer is down or slower than the engine.
func (o *Observer) Lag() int64 { return o.lag.Load() }

// Stats returns the running totals.
func (o *Observer) Stats() ObserverStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stats
}

// PublicKey is the key that verifies this observer's checkpoints.
func (o *Observer) PublicKey() ed25519.PublicKey { return o.pub }

// Run steps until ctx ends: at once again while there is a backlog, after
// Poll when caught up, and with a growing backoff after a failure. It
// returns when ctx is done, never earlier.
func (o *Observer) Run(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		res, err := o.Step(ctx)
		wait := o.cfg.Poll
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			o.onError(err)
			backoff = min(max(2*backoff, 100*time.Millisecond), o.cfg.MaxBackoff)
			wait = backoff
		case res.More:
			backoff, wait = 0, 0
		default:
			backoff = 0
		}
		if wait == 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// StepResult says what one round did.
type StepResult struct {
	Events      int  // outbox events consumed
	Records     int  // records appended
	Checkpoints int  // checkpoints signed
	More        bool // the batch was full: more events are likely waiting
	// Busy: another observer holds the position; this round did nothing.
	Busy bool
}

// Step runs one round in one transaction.
func (o *Observer) Step(ctx context.Context) (StepResult, error) {
	var res StepResult
	var behind int64
	err := o.tx.WithinTx(ctx, func(ctx context.Context, s ObserverStore) error {
		res, behind = StepResult{}, 0
		pos, ok, err := s.LockCursor(ctx)
		if err != nil {
			return err
		}
		if !ok {
			res.Busy = true
			return nil
		}
		events, err := s.Pending(ctx, pos, o.cfg.Batch)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			behind, err = s.Behind(ctx, pos)
			return err
		}
		res.Events, res.More = len(events), len(events) == o.cfg.Batch
		last := events[len(events)-1].Position
		if err := o.append(ctx, s, events, &res); err != nil {
			return err
		}
		if err := s.SetCursor(ctx, last); err != nil {
			return err
		}
		behind, err = s.Behind(ctx, last)
		return err
	})
	if err != nil {
		return StepResult{}, fmt.Errorf("journal observer: %w", err)
	}
	if !res.Busy {
		o.lag.Store(behind)
	}
	if res.Events > 0 {
		o.mu.Lock()
		o.stats.Rounds++
		o.stats.Events += int64(res.Events)
		o.stats.Records += int64(res.Records)
		o.stats.Checkpoints += int64(res.Checkpoints)
		o.mu.Unlock()
	}
	return res, nil
}

// append builds and stores the records of one round.
func (o *Observer) append(ctx context.Context, s ObserverStore, events []SourceEvent, res *StepResult) error {
	seqs := make([]int64, 0, len(events))
	for _, e := range events {
		if e.ExecutionID != "" {
			seqs = append(seqs, e.Seq)
		}
	}
	if len(seqs) == 0 {
		return nil
	}
	done, err := s.Journaled(ctx, seqs)
	if err != nil {
		return err
	}
	byExec := map[string][]SourceEvent{}
	for _, e := range events {
		if e.ExecutionID != "" && !done[e.Seq] {
			byExec[e.ExecutionID] = append(byExec[e.ExecutionID], e)
		}
	}
	if len(byExec) == 0 {
		return nil
	}
	ids := make([]string, 0, len(byExec))
	for id := range byExec {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one lock order for every writer
	tips, err := s.LockTips(ctx, ids)
	if err != nil {
		return err
	}
	observedAt := o.now()
	var records []NewRecord
	var cps []journal.Checkpoint
	for _, id := range ids {
		tip := tips[id]
		var prev *journal.Record
		if tip.Sequence > 0 {
			prev = &journal.Record{ExecutionID: id, Sequence: tip.Sequence, Digest: tip.Digest}
		}
		settled := tip.Settled
		for _, e := range byExec[id] {
			kind, body := Body(e)
			r, err := journal.Next(prev, id, kind, observedAt, body)
			if errors.Is(err, journal.ErrNotCanonicalizable) {
				// A value JSON has but RFC 8785 refuses (a number beyond
				// float64): keep the data as its JSON text rather than
				// stop journaling the outbox behind it.
				body["data"] = map[string]any{"notCanonical": jsonText(e.Data)}
				r, err = journal.Next(prev, id, kind, observedAt, body)
			}
			if err != nil {
				return fmt.Errorf("execution %s, event %d: %w", id, e.Seq, err)
			}
			line, err := r.MarshalJSON()
			if err != nil {
				return fmt.Errorf("execution %s, event %d: %w", id, e.Seq, err)
			}
			records = append(records, NewRecord{Record: r, SessionID: e.SessionID, SourceSeq: e.Seq, Line: line})
			prev = &records[len(records)-1].Record
			if e.Type == eventExecutionStatusChanged && execution.Status(str(e.Data["to"])).Terminal() {
				settled = true
			}
		}
		if settled {
			cp, err := journal.SignCheckpoint(o.key, id, prev.Sequence, prev.Digest)
			if err != nil {
				return err
			}
			cps = append(cps, cp)
		}
	}
	if len(cps) > 0 {
		if err := o.mayStillSign(ctx, s); err != nil {
			return err
		}
	}
	if err := s.Append(ctx, records); err != nil {
		return err
	}
	if o.audit != nil {
		if err := o.audit.Audit(ctx, auditRecords(records)); err != nil {
			return fmt.Errorf("audit sink: %w", err)
		}
	}
	if len(cps) > 0 {
		if err := s.AddCheckpoints(ctx, cps, o.pub); err != nil {
			return err
		}
	}
	res.Records, res.Checkpoints = len(records), len(cps)
	return nil
}

// ErrKeyRetired is matched by the error of a round that had checkpoints to
// sign while this instance's key is not the registry's current key (it was
// retired by a rotation on another instance): the round appends nothing and
// another instance, with the current key, journals the events.
var ErrKeyRetired = fmt.Errorf("this instance's signing key is not current: %w", fault.ErrConflict)

// mayStillSign checks, inside the round, that this instance's key is still
// the current one; the share lock it takes makes a rotation wait for the
// round.
func (o *Observer) mayStillSign(ctx context.Context, s ObserverStore) error {
	id := journal.KeyID(o.pub)
	st, err := s.KeyStatus(ctx, id)
	if err != nil {
		return err
	}
	if st != KeyCurrent {
		return fmt.Errorf("%w: key %s is %s; this instance signs no checkpoint until it restarts with the current key (GET /api/journal/public-key names it)",
			ErrKeyRetired, id, cmp.Or(string(st), "not registered"))
	}
	return nil
}

// Body is the record kind and body an outbox event becomes: the event's
// envelope, and for an operator command (a decision) its actor, channel and
// cause as well.
func Body(e SourceEvent) (journal.Kind, map[string]any) {
	data := e.Data
	if data == nil {
		data = map[string]any{}
	}
	b := map[string]any{"seq": e.Seq, "at": e.At.UTC().Format(time.RFC3339Nano), "type": e.Type,
		"sessionId": e.SessionID, "executionId": e.ExecutionID, "actor": e.Actor, "data": data}
	if e.WorkflowID != "" {
		b["workflowId"] = e.WorkflowID
	}
	if e.NodeID != "" {
		b["nodeId"] = e.NodeID
	}
	if e.Channel != "" {
		b["channel"] = e.Channel
	}
	if !decisionTypes[e.Type] {
		return journal.KindEvent, b
	}
	b["decision"] = "operator_command"
	b["channel"] = e.Channel // present on decisions even when unknown ("")
	if directiveTypes[e.Type] {
		return journal.KindDecision, directiveBody(b, data)
	}
	if reviewTypes[e.Type] {
		return journal.KindDecision, reviewBody(b, data)
	}
	if e.Type == eventHoldReleased {
		return journal.KindDecision, holdBody(b, data)
	}
	cause := map[string]any{}
	if id := str(data["commandId"]); id != "" {
		cause["commandId"] = id
	}
	switch {
	case str(data["reason"]) != "":
		cause["reason"] = str(data["reason"])
	case str(data["message"]) != "":
		cause["reason"] = str(data["message"])
	}
	if a := str(data["action"]); a != "" {
		cause["action"] = a
	}
	if c := str(data["cause"]); c != "" {
		cause["signal"] = c // what a supervisor reacted to
	}
	b["cause"] = cause
	return journal.KindDecision, b
}

// directiveBody completes the body of a supervisor directive's decision:
// its cause is the directive's key, what the supervisor reacted to (signal:
// a signal cursor), its reason and what became of it.
func directiveBody(b, data map[string]any) map[string]any {
	b["decision"] = "supervisor_directive"
	cause := map[string]any{}
	for from, to := range map[string]string{"key": "key", "cause": "signal", "reason": "reason", "message": "message"} {
		if v := str(data[from]); v != "" {
			cause[to] = v
		}
	}
	if c, ok := data["command"].(map[string]any); ok {
		if t := str(c["type"]); t != "" {
			cause["command"] = t
		}
	}
	b["cause"] = cause
	return b
}

// reviewBody completes the body of a review's decision: the review, the
// command under review, the supervisor asked or answering, and the move
// (ALLOW, DENY, REQUIRE_APPROVAL, NO_OPINION, TIMEOUT, APPROVE, REJECT,
// APPLIED) with its reason.
func reviewBody(b, data map[string]any) map[string]any {
	b["decision"] = "review"
	cause := map[string]any{}
	for _, k := range []string{"reviewId", "supervisorId", "move", "status", "reason", "escalatedFrom", "requestedBy"} {
		if v := str(data[k]); v != "" {
			cause[k] = v
		}
	}
	if c, ok := data["command"].(map[string]any); ok {
		if t := str(c["type"]); t != "" {
			cause["command"] = t
		}
	}
	b["cause"] = cause
	return b
}

// holdBody completes the body of a hold's release by an ADMIN: its cause
// names the holder, the hold's line (since, reason), the ADMIN's reason and
// what became of it.
func holdBody(b, data map[string]any) map[string]any {
	b["decision"] = "hold_release"
	cause := map[string]any{}
	for _, k := range []string{"supervisorId", "heldSince", "holdReason", "reason", "message"} {
		if v := str(data[k]); v != "" {
			cause[k] = v
		}
	}
	b["cause"] = cause
	return b
}

// jsonText is v as JSON text, for a value with no canonical form.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
