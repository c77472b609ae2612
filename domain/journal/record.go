package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

// SchemaVersion is the record format this package writes and verifies.
const SchemaVersion = 1

// Kind says what a record holds.
type Kind string

// The record kinds: an event from the outbox, or a decision (an operator
// command, a supervisor directive, verdict or approval) with its cause.
const (
	KindEvent    Kind = "event"
	KindDecision Kind = "decision"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k == KindEvent || k == KindDecision }

// DigestPrefix starts every digest: the hash is named so it can change later.
const DigestPrefix = "sha256:"

// ObservedAtLayout is the one form of observedAt: RFC 3339, UTC, nine
// fractional digits, so the text (and so the digest) of an instant is unique.
const ObservedAtLayout = "2006-01-02T15:04:05.000000000Z07:00"

// maxSafeInteger is the largest integer every JSON reader holds exactly
// (2^53 - 1); sequences and versions beyond it are refused.
const maxSafeInteger = 1<<53 - 1

// Record is one immutable entry of an execution's journal. Its digest is
// "sha256:" + the lowercase hex SHA-256 of the RFC 8785 canonical JSON of the
// record without "digest"; previousDigest is the digest of the record before
// it (absent on the first), so deleting, reordering or editing a record
// breaks the chain.
//
// Event and Decision hold JSON objects as encoding/json decodes them
// (map[string]any, []any, string, json.Number, bool, nil); exactly one is set,
// as Kind says. Records made by Next or ParseRecord own their bodies; do not
// change them afterwards.
type Record struct {
	SchemaVersion  int
	ExecutionID    string
	Sequence       int64
	Kind           Kind
	ObservedAt     time.Time
	PreviousDigest string // "" on the first record
	Event          map[string]any
	Decision       map[string]any
	Digest         string
}

// Next builds the record that follows prev (nil for the first record of an
// execution) and computes its digest. body is the event or decision object;
// it is copied through its canonical form, so later changes to it do not
// reach the record, and a body with no canonical form (NaN, invalid UTF-8) is
// refused.
func Next(prev *Record, executionID string, kind Kind, observedAt time.Time, body map[string]any) (Record, error) {
	if executionID == "" {
		return Record{}, fault.Newf(fault.ErrInvalid, "journal record: executionId is empty")
	}
	if !kind.Valid() {
		return Record{}, fault.Newf(fault.ErrInvalid, "journal record: kind %q is not event or decision", kind)
	}
	if y := observedAt.UTC().Year(); observedAt.IsZero() || y < 1 || y > 9999 {
		return Record{}, fault.Newf(fault.ErrInvalid, "journal record: observedAt is not set or out of range")
	}
	if body == nil {
		return Record{}, fault.Newf(fault.ErrInvalid, "journal record: the %s body is missing", kind)
	}
	r := Record{SchemaVersion: SchemaVersion, ExecutionID: executionID, Sequence: 1, Kind: kind,
		ObservedAt: observedAt.UTC()}
	if prev != nil {
		if prev.ExecutionID != executionID {
			return Record{}, fault.Newf(fault.ErrInvalid,
				"journal record: the previous record belongs to execution %q, not %q", prev.ExecutionID, executionID)
		}
		if !validDigest(prev.Digest) {
			return Record{}, fault.Newf(fault.ErrInvalid,
				"journal record: the previous record (sequence %d) has no valid digest", prev.Sequence)
		}
		if prev.Sequence < 1 || prev.Sequence >= maxSafeInteger {
			return Record{}, fault.Newf(fault.ErrInvalid,
				"journal record: the previous sequence %d cannot be followed", prev.Sequence)
		}
		r.Sequence = prev.Sequence + 1
		r.PreviousDigest = prev.Digest
	}
	raw, err := Canonical(body)
	if err != nil {
		return Record{}, fmt.Errorf("journal record: %s body: %w", kind, err)
	}
	copied, err := decodeJSON(raw)
	if err != nil { // cannot happen: canonical output is JSON
		return Record{}, fmt.Errorf("journal record: %s body: %w", kind, err)
	}
	if kind == KindEvent {
		r.Event = copied.(map[string]any)
	} else {
		r.Decision = copied.(map[string]any)
	}
	if r.Digest, err = r.ComputeDigest(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// fields is the record as a JSON object, with or without its digest.
func (r Record) fields(withDigest bool) map[string]any {
	m := map[string]any{
		"schemaVersion": r.SchemaVersion,
		"executionId":   r.ExecutionID,
		"sequence":      r.Sequence,
		"kind":          string(r.Kind),
		"observedAt":    r.ObservedAt.UTC().Format(ObservedAtLayout),
	}
	if r.PreviousDigest != "" {
		m["previousDigest"] = r.PreviousDigest
	}
	if r.Event != nil {
		m["event"] = r.Event
	}
	if r.Decision != nil {
		m["decision"] = r.Decision
	}
	if withDigest {
		m["digest"] = r.Digest
	}
	return m
}

// ComputeDigest returns "sha256:" + the lowercase hex SHA-256 of the
// canonical JSON of the record without its digest. It recomputes; it does not
// read r.Digest.
func (r Record) ComputeDigest() (string, error) {
	raw, err := Canonical(r.fields(false))
	if err != nil {
		return "", fmt.Errorf("journal record %d: %w", r.Sequence, err)
	}
	sum := sha256.Sum256(raw)
	return DigestPrefix + hex.EncodeToString(sum[:]), nil
}

// MarshalJSON writes the record as one NDJSON line (without the newline): the
// canonical JSON of the whole record, digest included.
func (r Record) MarshalJSON() ([]byte, error) {
	return Canonical(r.fields(true))
}

// UnmarshalJSON is ParseRecord.
func (r *Record) UnmarshalJSON(data []byte) error {
	p, err := ParseRecord(data)
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// recordFields are the members a record may have.
var recordFields = map[string]bool{"schemaVersion": true, "executionId": true, "sequence": true, "kind": true,
	"observedAt": true, "previousDigest": true, "event": true, "decision": true, "digest": true}

// ParseRecord reads one NDJSON line. It checks the shape only (every member
// present with the right type and form, no unknown or duplicate members,
// exactly the body its kind names); it recomputes nothing, so a tampered
// record parses and Verify names what is wrong with it. Any schemaVersion
// that is a positive integer parses, so Verify can report the wrong one.
func ParseRecord(line []byte) (Record, error) {
	v, err := decodeJSON(line)
	if err != nil {
		return Record{}, fault.Newf(fault.ErrInvalid, "journal record is not JSON: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Record{}, fault.Newf(fault.ErrInvalid, "journal record is not a JSON object")
	}
	var r Record
	var bad []fault.Violation
	fail := func(path, format string, args ...any) {
		bad = append(bad, fault.Violation{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	for k := range m {
		if !recordFields[k] {
			fail(k, "is not a record member")
		}
	}
	if n, ok := positiveInteger(m["schemaVersion"]); ok {
		r.SchemaVersion = int(n)
	} else {
		fail("schemaVersion", "must be a positive integer")
	}
	if s, ok := m["executionId"].(string); ok && s != "" {
		r.ExecutionID = s
	} else {
		fail("executionId", "must be a non-empty string")
	}
	if n, ok := positiveInteger(m["sequence"]); ok {
		r.Sequence = n
	} else {
		fail("sequence", "must be an integer from 1 to 2^53-1")
	}
	if s, ok := m["kind"].(string); ok && Kind(s).Valid() {
		r.Kind = Kind(s)
	} else {
		fail("kind", "must be \"event\" or \"decision\"")
	}
	if s, ok := m["observedAt"].(string); !ok {
		fail("observedAt", "must be a string")
	} else if t, err := time.Parse(time.RFC3339Nano, s); err != nil || t.UTC().Format(ObservedAtLayout) != s {
		fail("observedAt", "must be RFC 3339 in UTC with nine fractional digits, like 2026-01-02T03:04:05.000000006Z")
	} else {
		r.ObservedAt = t.UTC()
	}
	if p, present := m["previousDigest"]; present {
		if s, ok := p.(string); ok && validDigest(s) {
			r.PreviousDigest = s
		} else {
			fail("previousDigest", "must be \"sha256:\" and 64 lowercase hex digits")
		}
	}
	if s, ok := m["digest"].(string); ok && validDigest(s) {
		r.Digest = s
	} else {
		fail("digest", "must be \"sha256:\" and 64 lowercase hex digits")
	}
	_, hasEvent := m["event"]
	_, hasDecision := m["decision"]
	switch {
	case hasEvent && hasDecision:
		fail("", "has both event and decision; a record holds exactly one")
	case r.Kind == KindEvent && !hasEvent:
		fail("event", "is required on an event record")
	case r.Kind == KindDecision && !hasDecision:
		fail("decision", "is required on a decision record")
	case r.Kind == KindEvent && hasDecision:
		fail("decision", "is not allowed on an event record")
	case r.Kind == KindDecision && hasEvent:
		fail("event", "is not allowed on a decision record")
	}
	if hasEvent {
		if body, ok := m["event"].(map[string]any); ok {
			r.Event = body
		} else {
			fail("event", "must be a JSON object")
		}
	}
	if hasDecision {
		if body, ok := m["decision"].(map[string]any); ok {
			r.Decision = body
		} else {
			fail("decision", "must be a JSON object")
		}
	}
	if len(bad) > 0 {
		return Record{}, &fault.ValidationError{Subject: "journal record", Violations: sortViolations(bad)}
	}
	return r, nil
}

// sortViolations orders violations by path so the message is stable.
func sortViolations(v []fault.Violation) []fault.Violation {
	slices.SortStableFunc(v, func(a, b fault.Violation) int { return strings.Compare(a.Path, b.Path) })
	return v
}

// positiveInteger reads a JSON number that is a whole number in 1..2^53-1.
func positiveInteger(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || f != math.Trunc(f) || f < 1 || f > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

// validDigest reports whether s is "sha256:" and 64 lowercase hex digits.
func validDigest(s string) bool {
	h, ok := strings.CutPrefix(s, DigestPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !(h[i] >= '0' && h[i] <= '9' || h[i] >= 'a' && h[i] <= 'f') {
			return false
		}
	}
	return true
}
