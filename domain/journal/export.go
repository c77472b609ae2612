package journal

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"

	"github.com/yukta/yukta/domain/fault"
)

// An export is NDJSON: one record per line (its canonical JSON, in sequence
// order), then, when the execution has settled, one checkpoint line
// {"checkpoint":{"digest","executionId","keyId","sequence","signature"}} with
// the signature in standard base64 and keyId naming the key that signed it
// (absent on checkpoints signed before keys were named). Everything a verifier needs but the public
// key is in the file.

// CheckpointLine returns the export line of cp (without the newline): the
// canonical JSON of {"checkpoint": {...}}.
func CheckpointLine(cp Checkpoint) ([]byte, error) {
	m := map[string]any{
		"executionId": cp.ExecutionID, "sequence": cp.Sequence, "digest": cp.Digest,
		"signature": base64.StdEncoding.EncodeToString(cp.Signature),
	}
	if cp.KeyID != "" {
		m["keyId"] = cp.KeyID
	}
	return Canonical(map[string]any{"checkpoint": m})
}

// IsCheckpointLine reports whether line is a checkpoint line rather than a
// record: a JSON object whose only member is "checkpoint".
func IsCheckpointLine(line []byte) bool {
	v, err := decodeJSON(line)
	if err != nil {
		return false
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	_, ok = m["checkpoint"]
	return ok
}

// ParseCheckpointLine reads a checkpoint line. It checks the shape only; the
// signature is checked by VerifyCheckpoint.
func ParseCheckpointLine(line []byte) (Checkpoint, error) {
	bad := func(format string, args ...any) (Checkpoint, error) {
		return Checkpoint{}, fault.Newf(fault.ErrInvalid, "journal checkpoint line: "+format, args...)
	}
	v, err := decodeJSON(line)
	if err != nil {
		return bad("not JSON: %v", err)
	}
	outer, ok := v.(map[string]any)
	if !ok || len(outer) != 1 {
		return bad(`must be {"checkpoint": {...}}`)
	}
	m, ok := outer["checkpoint"].(map[string]any)
	if !ok {
		return bad(`"checkpoint" must be an object`)
	}
	for k := range m {
		switch k {
		case "executionId", "sequence", "digest", "signature", "keyId":
		default:
			return bad("%q is not a checkpoint member", k)
		}
	}
	var cp Checkpoint
	if cp.ExecutionID, ok = m["executionId"].(string); !ok || cp.ExecutionID == "" {
		return bad("executionId must be a non-empty string")
	}
	if cp.Sequence, ok = positiveInteger(m["sequence"]); !ok {
		return bad("sequence must be an integer from 1 to 2^53-1")
	}
	if cp.Digest, ok = m["digest"].(string); !ok || !validDigest(cp.Digest) {
		return bad(`digest must be "sha256:" and 64 lowercase hex digits`)
	}
	if id, present := m["keyId"]; present {
		if cp.KeyID, ok = id.(string); !ok || !validKeyID(cp.KeyID) {
			return bad("keyId must be %d lowercase hex digits (the key id of GET /api/journal/public-key)", 2*KeyIDBytes)
		}
	}
	sig, ok := m["signature"].(string)
	if !ok {
		return bad("signature must be a base64 string")
	}
	if cp.Signature, err = base64.StdEncoding.DecodeString(sig); err != nil || len(cp.Signature) != ed25519.SignatureSize {
		return bad("signature must be the standard base64 of a %d-byte ed25519 signature", ed25519.SignatureSize)
	}
	return cp, nil
}

// VerifyLines verifies stored or exported record lines, in order, against a
// checkpoint (a zero Checkpoint when there is none) and a public key. A line
// that is not a well-formed record makes the journal INVALID at its place:
// the records before it are verified first, so an earlier break is named
// instead.
func VerifyLines(lines [][]byte, cp Checkpoint, publicKey ed25519.PublicKey) Result {
	return VerifyLinesKeys(lines, cp, NewKeySet(publicKey))
}

// VerifyLinesKeys is VerifyLines with a set of trusted keys (see
// VerifyCheckpointKeys).
func VerifyLinesKeys(lines [][]byte, cp Checkpoint, keys KeySet) Result {
	records := make([]Record, 0, len(lines))
	for _, line := range lines {
		r, err := ParseRecord(line)
		if err != nil {
			res := VerifyCheckpoint(records, Checkpoint{}, nil)
			if res.Result == VerdictInvalid {
				return res
			}
			return Result{Result: VerdictInvalid, Sequence: res.Sequence, ChainTip: res.ChainTip,
				FirstBadSequence: res.Sequence + 1, Reason: ReasonMalformed,
				Detail: fmt.Sprintf("record at sequence %d does not parse: %v", res.Sequence+1, err)}
		}
		records = append(records, r)
	}
	return VerifyCheckpointKeys(records, cp, keys)
}

// VerifyExport verifies an NDJSON export, split into lines (blank lines are
// ignored). A checkpoint line may only come last; one anywhere else, or a
// second one, makes the export INVALID there.
func VerifyExport(lines [][]byte, publicKey ed25519.PublicKey) Result {
	return VerifyExportKeys(lines, NewKeySet(publicKey))
}

// VerifyExportKeys is VerifyExport with a set of trusted keys: the
// checkpoint line's keyId picks the key (see VerifyCheckpointKeys).
func VerifyExportKeys(lines [][]byte, keys KeySet) Result {
	var records [][]byte
	var cp Checkpoint
	for i, line := range lines {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if !IsCheckpointLine(line) {
			if len(cp.Signature) > 0 {
				res := VerifyLines(records, Checkpoint{}, nil)
				return Result{Result: VerdictInvalid, Sequence: res.Sequence, ChainTip: res.ChainTip,
					FirstBadSequence: res.Sequence + 1, Reason: ReasonMalformed,
					Detail: fmt.Sprintf("line %d: a record follows the checkpoint line, which must come last", i+1)}
			}
			records = append(records, line)
			continue
		}
		c, err := ParseCheckpointLine(line)
		if err == nil && len(cp.Signature) > 0 {
			err = fault.Newf(fault.ErrInvalid, "a second checkpoint line")
		}
		if err != nil {
			res := VerifyLines(records, Checkpoint{}, nil)
			if res.Result == VerdictInvalid {
				return res
			}
			return Result{Result: VerdictInvalid, Sequence: res.Sequence, ChainTip: res.ChainTip,
				Reason: ReasonMalformed, Detail: fmt.Sprintf("line %d: %v", i+1, err)}
		}
		cp = c
	}
	return VerifyLinesKeys(records, cp, keys)
}
