package journal

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"

	"github.com/yukta/yukta/domain/fault"
)

// Reason names why a journal is not VALID. The values are stable: edges show
// them as they are.
type Reason string

// Reasons found by walking the chain (Verify), first failing check wins.
const (
	ReasonWrongSchemaVersion Reason = "wrong_schema_version" // schemaVersion is not 1
	ReasonMalformed          Reason = "malformed"            // kind, body or executionId missing or inconsistent
	ReasonWrongExecution     Reason = "wrong_execution"      // executionId differs from the first record's
	ReasonReorder            Reason = "reorder"              // sequence not increasing, or the expected one comes later
	ReasonGap                Reason = "gap"                  // the expected sequence is missing
	ReasonDigestMismatch     Reason = "digest_mismatch"      // digest is not the hash of the record
	ReasonBrokenLink         Reason = "broken_link"          // previousDigest is not the previous record's digest
)

// Reasons found by checking the signed checkpoint (VerifyCheckpoint).
const (
	ReasonNoCheckpoint       Reason = "no_checkpoint"       // none given: UNANCHORED
	ReasonNoPublicKey        Reason = "no_public_key"       // no usable ed25519 key: UNANCHORED
	ReasonUnknownKey         Reason = "unknown_key"         // the checkpoint's keyId is not among the keys given: UNANCHORED
	ReasonBadSignature       Reason = "bad_signature"       // the signature does not verify: UNANCHORED
	ReasonCheckpointMismatch Reason = "checkpoint_mismatch" // signed, but not this journal's end: INVALID
)

// Report is what the chain alone proves. Sequence and ChainTip are those of
// the last record that verified (0 and "" when none did). When Valid is
// false, FirstBadSequence is the first sequence that cannot be trusted (the
// one expected after Sequence) and Reason and Detail say what was found there.
type Report struct {
	Valid            bool   `json:"valid"`
	Sequence         int64  `json:"sequence"`
	ChainTip         string `json:"chainTip,omitempty"`
	FirstBadSequence int64  `json:"firstBadSequence,omitempty"`
	Reason           Reason `json:"reason,omitempty"`
	Detail           string `json:"detail,omitempty"`
}

// Verify walks records in order and stops at the first one that breaks the
// chain. Each record is checked for, in this order: schema version, shape,
// execution (the executionId most records name), sequence (1,
// 2, … with no gap; a sequence that appears later than expected is a
// reorder, one that never appears is a gap), its own digest, and its link to
// the record before. The structural checks come first so the reason is the
// most specific one: a deleted record reads "gap", not just "broken link".
//
// A valid chain proves no record was edited, dropped, added or moved inside
// it; it cannot show a cut tail or a chain recomputed from scratch. That
// needs the signed checkpoint: see VerifyCheckpoint.
func Verify(records []Record) Report {
	var rep Report
	execID := journalExecution(records)
	for i := range records {
		r := &records[i]
		if reason, detail := checkRecord(records, i, rep.Sequence, execID); reason != "" {
			rep.FirstBadSequence = rep.Sequence + 1
			rep.Reason, rep.Detail = reason, detail
			return rep
		}
		rep.Sequence, rep.ChainTip = r.Sequence, r.Digest
	}
	rep.Valid = true
	return rep
}

// journalExecution is the execution a journal belongs to: the executionId
// most of its records name, the earliest of them on a tie. A majority rather
// than the first record, so one edited executionId is pinned on the record
// that carries it even when that record is the first.
func journalExecution(records []Record) string {
	counts := map[string]int{}
	best := ""
	for _, r := range records {
		counts[r.ExecutionID]++
		if counts[r.ExecutionID] > counts[best] || best == "" {
			best = r.ExecutionID
		}
	}
	return best
}

// checkRecord checks records[i], given the sequence of the record before it
// (0 for the first) and the journal's execution, and says what is wrong, if
// anything.
func checkRecord(records []Record, i int, prevSeq int64, execID string) (Reason, string) {
	r := &records[i]
	want := prevSeq + 1
	if r.SchemaVersion != SchemaVersion {
		return ReasonWrongSchemaVersion, fmt.Sprintf("record at sequence %d has schemaVersion %d; this verifier reads %d",
			want, r.SchemaVersion, SchemaVersion)
	}
	if msg := shapeProblem(r); msg != "" {
		return ReasonMalformed, fmt.Sprintf("record at sequence %d %s", want, msg)
	}
	if r.ExecutionID != execID {
		return ReasonWrongExecution, fmt.Sprintf("record at sequence %d belongs to execution %q, not %q",
			want, r.ExecutionID, execID)
	}
	if r.Sequence != want {
		if r.Sequence < want {
			return ReasonReorder, fmt.Sprintf("sequence %d follows %d: sequences must increase", r.Sequence, prevSeq)
		}
		for _, later := range records[i+1:] {
			if later.Sequence == want {
				return ReasonReorder, fmt.Sprintf("sequence %d comes before %d: records are out of order", r.Sequence, want)
			}
		}
		return ReasonGap, fmt.Sprintf("sequence %d is missing: %d follows %d", want, r.Sequence, prevSeq)
	}
	got, err := r.ComputeDigest()
	if err != nil {
		return ReasonDigestMismatch, fmt.Sprintf("record %d cannot be hashed: %v", want, err)
	}
	if got != r.Digest {
		return ReasonDigestMismatch, fmt.Sprintf("record %d says digest %s but hashes to %s", want, r.Digest, got)
	}
	if i == 0 {
		if r.PreviousDigest != "" {
			return ReasonBrokenLink, fmt.Sprintf("record %d is first but names a previous digest %s", want, r.PreviousDigest)
		}
	} else if prev := records[i-1].Digest; r.PreviousDigest != prev {
		return ReasonBrokenLink, fmt.Sprintf("record %d names previous digest %s but record %d has %s",
			want, r.PreviousDigest, prevSeq, prev)
	}
	return "", ""
}

// shapeProblem says how r breaks the record shape, or "" when it does not.
func shapeProblem(r *Record) string {
	switch {
	case r.ExecutionID == "":
		return "has no executionId"
	case !r.Kind.Valid():
		return fmt.Sprintf("has kind %q, not event or decision", r.Kind)
	case r.Event != nil && r.Decision != nil:
		return "holds both an event and a decision"
	case r.Kind == KindEvent && r.Event == nil:
		return "is an event record without an event"
	case r.Kind == KindDecision && r.Decision == nil:
		return "is a decision record without a decision"
	}
	return ""
}

// Checkpoint is the server's signed statement that an execution's journal
// ends at Sequence with Digest. Signature is the ed25519 signature of
// CheckpointPayload(ExecutionID, Sequence, Digest). KeyID names the key
// that signed it (KeyID of its public key; "" on checkpoints made before
// keys were named): it is not part of what is signed, it only tells a
// verifier holding several keys which one to check the signature with, so
// a wrong KeyID can make a checkpoint fail, never pass.
type Checkpoint struct {
	ExecutionID string `json:"executionId"`
	Sequence    int64  `json:"sequence"`
	Digest      string `json:"digest"`
	Signature   []byte `json:"signature"` // base64 in JSON
	KeyID       string `json:"keyId,omitempty"`
}

// CheckpointPayload is the byte string a checkpoint signs: the canonical JSON
// of {"digest", "executionId", "sequence"}.
func CheckpointPayload(executionID string, sequence int64, digest string) ([]byte, error) {
	return Canonical(map[string]any{"executionId": executionID, "sequence": sequence, "digest": digest})
}

// SignCheckpoint signs that the journal of executionID ends at sequence with
// digest.
func SignCheckpoint(priv ed25519.PrivateKey, executionID string, sequence int64, digest string) (Checkpoint, error) {
	switch {
	case len(priv) != ed25519.PrivateKeySize:
		return Checkpoint{}, fault.Newf(fault.ErrInvalid, "journal checkpoint: the signing key is not an ed25519 private key")
	case executionID == "":
		return Checkpoint{}, fault.Newf(fault.ErrInvalid, "journal checkpoint: executionId is empty")
	case sequence < 1 || sequence > maxSafeInteger:
		return Checkpoint{}, fault.Newf(fault.ErrInvalid, "journal checkpoint: sequence %d is not a record sequence", sequence)
	case !validDigest(digest):
		return Checkpoint{}, fault.Newf(fault.ErrInvalid, "journal checkpoint: %q is not a record digest", digest)
	}
	payload, err := CheckpointPayload(executionID, sequence, digest)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("journal checkpoint: %w", err)
	}
	return Checkpoint{ExecutionID: executionID, Sequence: sequence, Digest: digest,
		Signature: ed25519.Sign(priv, payload), KeyID: KeyID(priv.Public().(ed25519.PublicKey))}, nil
}

// Verdict is the answer of a full verification.
type Verdict string

// The verdicts.
const (
	// VerdictValid: the chain verifies and a valid signed checkpoint names
	// its last record.
	VerdictValid Verdict = "VALID"
	// VerdictUnanchored: the chain verifies, but no valid signed checkpoint
	// vouches for its end, so a cut tail or a recomputed chain would not show.
	VerdictUnanchored Verdict = "UNANCHORED"
	// VerdictInvalid: the chain is broken, or a valid checkpoint contradicts it.
	VerdictInvalid Verdict = "INVALID"
)

// Result is a full verification: the chain report with the verdict. Reason
// and Detail say why the verdict is not VALID.
type Result struct {
	Result           Verdict `json:"result"`
	Sequence         int64   `json:"sequence"`
	ChainTip         string  `json:"chainTip,omitempty"`
	FirstBadSequence int64   `json:"firstBadSequence,omitempty"`
	Reason           Reason  `json:"reason,omitempty"`
	Detail           string  `json:"detail,omitempty"`
}

// VerifyCheckpoint verifies the chain and then the checkpoint: VALID only when
// the chain verifies, the checkpoint's signature verifies under publicKey and
// it names the journal's last record (execution, sequence and digest);
// UNANCHORED when the chain verifies but there is no valid checkpoint (none
// given, no usable key, or a bad signature); INVALID when the chain is broken
// or a validly signed checkpoint does not match its end (a cut tail, records
// after the checkpoint, or a chain recomputed after an edit). A zero
// Checkpoint (no signature) means none was given.
func VerifyCheckpoint(records []Record, cp Checkpoint, publicKey ed25519.PublicKey) Result {
	return VerifyCheckpointKeys(records, cp, NewKeySet(publicKey))
}

// VerifyCheckpointKeys is VerifyCheckpoint with a set of trusted keys (the
// current and retired keys a server lists). A checkpoint that names its key
// (KeyID) is checked with that key alone, and is UNANCHORED (unknown_key)
// when the set lacks it; one that names none (made before keys were named)
// is VALID when any key of the set verifies its signature.
func VerifyCheckpointKeys(records []Record, cp Checkpoint, keys KeySet) Result {
	rep := Verify(records)
	res := Result{Sequence: rep.Sequence, ChainTip: rep.ChainTip}
	if !rep.Valid {
		res.Result, res.FirstBadSequence, res.Reason, res.Detail = VerdictInvalid, rep.FirstBadSequence, rep.Reason, rep.Detail
		return res
	}
	unanchored := func(reason Reason, detail string) Result {
		res.Result, res.Reason, res.Detail = VerdictUnanchored, reason, detail
		return res
	}
	if len(cp.Signature) == 0 {
		return unanchored(ReasonNoCheckpoint, "no signed checkpoint: a cut tail or a recomputed chain would not show")
	}
	if keys.Len() == 0 {
		return unanchored(ReasonNoPublicKey, "no ed25519 public key to check the checkpoint with")
	}
	payload, err := CheckpointPayload(cp.ExecutionID, cp.Sequence, cp.Digest)
	if err != nil {
		return unanchored(ReasonBadSignature, "the checkpoint cannot be read to check its signature")
	}
	if cp.KeyID != "" {
		k, ok := keys.Key(cp.KeyID)
		if !ok {
			return unanchored(ReasonUnknownKey, fmt.Sprintf("the checkpoint was signed by key %s, which is not among the keys given (%s); "+
				"give every key the server lists (GET /api/journal/public-key)", cp.KeyID, strings.Join(keys.IDs(), ", ")))
		}
		if !ed25519.Verify(k, payload, cp.Signature) {
			return unanchored(ReasonBadSignature, fmt.Sprintf("the checkpoint signature does not verify with key %s", cp.KeyID))
		}
	} else if !slices.ContainsFunc(keys.IDs(), func(id string) bool {
		k, _ := keys.Key(id)
		return ed25519.Verify(k, payload, cp.Signature)
	}) {
		if keys.Len() == 1 {
			return unanchored(ReasonBadSignature, "the checkpoint signature does not verify with this public key")
		}
		return unanchored(ReasonBadSignature, fmt.Sprintf("the checkpoint signature does not verify with any of the %d keys given", keys.Len()))
	}
	mismatch := func(firstBad int64, format string, args ...any) Result {
		res.Result, res.FirstBadSequence, res.Reason = VerdictInvalid, firstBad, ReasonCheckpointMismatch
		res.Detail = fmt.Sprintf(format, args...)
		return res
	}
	if len(records) == 0 {
		return mismatch(1, "the checkpoint covers %d records of execution %q but the journal is empty", cp.Sequence, cp.ExecutionID)
	}
	last := records[len(records)-1]
	switch {
	case cp.ExecutionID != last.ExecutionID:
		return mismatch(0, "the checkpoint is for execution %q, the journal for %q", cp.ExecutionID, last.ExecutionID)
	case cp.Sequence < 1:
		return mismatch(0, "the checkpoint names sequence %d, which no record has", cp.Sequence)
	case cp.Sequence > last.Sequence:
		return mismatch(last.Sequence+1, "the checkpoint covers sequence %d but the journal ends at %d: its tail was cut",
			cp.Sequence, last.Sequence)
	case cp.Sequence < last.Sequence:
		if records[cp.Sequence-1].Digest == cp.Digest {
			return mismatch(cp.Sequence+1, "the journal goes on to sequence %d after the checkpoint at %d",
				last.Sequence, cp.Sequence)
		}
		return mismatch(0, "the checkpoint at sequence %d names digest %s but the journal has %s there",
			cp.Sequence, cp.Digest, records[cp.Sequence-1].Digest)
	case cp.Digest != last.Digest:
		return mismatch(0, "the checkpoint names digest %s for sequence %d but the journal has %s: the chain was rewritten",
			cp.Digest, cp.Sequence, last.Digest)
	}
	res.Result = VerdictValid
	return res
}
