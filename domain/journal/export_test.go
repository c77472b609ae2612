package journal

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"
)

// exportOf is the NDJSON export of a clean journal with its checkpoint line.
func exportOf(t *testing.T) ([][]byte, []Record) {
	t.Helper()
	recs, cp, _ := fixture(t)
	lines := exportLines(t, recs)
	cpl, err := CheckpointLine(cp)
	if err != nil {
		t.Fatal(err)
	}
	return append(lines, cpl), recs
}

func TestCheckpointLineRoundTrip(t *testing.T) {
	_, cp, _ := fixture(t)
	line, err := CheckpointLine(cp)
	if err != nil {
		t.Fatal(err)
	}
	if !IsCheckpointLine(line) {
		t.Fatalf("%s is not recognised as a checkpoint line", line)
	}
	got, err := ParseCheckpointLine(line)
	if err != nil {
		t.Fatal(err)
	}
	if got.ExecutionID != cp.ExecutionID || got.Sequence != cp.Sequence || got.Digest != cp.Digest || !bytes.Equal(got.Signature, cp.Signature) {
		t.Fatalf("got %+v, want %+v", got, cp)
	}
	for _, bad := range []string{`{"checkpoint":{}}`, `{"checkpoint":1}`, `{"checkpoint":{"executionId":"e","sequence":1,"digest":"sha256:00","signature":"AA=="}}`,
		`{"checkpoint":{"executionId":"e","sequence":0,"digest":"` + cp.Digest + `","signature":"AA=="}}`, `[1]`} {
		if _, err := ParseCheckpointLine([]byte(bad)); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

// TestVerifyExport: the export verifies VALID with the key, UNANCHORED
// without it or without the checkpoint line, and INVALID with the right
// sequence when a line is not a record, when lines are missing, or when the
// checkpoint line is misplaced.
func TestVerifyExport(t *testing.T) {
	lines, _ := exportOf(t)
	_, cp, pub := fixture(t)
	_ = cp
	n := len(lines) - 1 // records
	if res := VerifyExport(lines, pub); res.Result != VerdictValid || res.Sequence != int64(n) {
		t.Fatalf("clean export: %+v", res)
	}
	withBlank := append([][]byte{{}}, append(append([][]byte{}, lines[:3]...), append([][]byte{[]byte("  ")}, lines[3:]...)...)...)
	if res := VerifyExport(withBlank, pub); res.Result != VerdictValid {
		t.Fatalf("blank lines: %+v", res)
	}
	if res := VerifyExport(lines, nil); res.Result != VerdictUnanchored || res.Reason != ReasonNoPublicKey {
		t.Fatalf("no key: %+v", res)
	}
	if res := VerifyExport(lines[:n], pub); res.Result != VerdictUnanchored || res.Reason != ReasonNoCheckpoint {
		t.Fatalf("no checkpoint line: %+v", res)
	}
	for k := 1; k <= n; k++ {
		bad := append([][]byte{}, lines...)
		bad[k-1] = []byte(`{"not":"a record"}`)
		if res := VerifyExport(bad, pub); res.Result != VerdictInvalid || res.FirstBadSequence != int64(k) || res.Reason != ReasonMalformed {
			t.Fatalf("line %d not a record: %+v", k, res)
		}
		torn := append([][]byte{}, lines[:k-1]...)
		torn = append(torn, lines[k-1][:len(lines[k-1])/2])
		if res := VerifyExport(torn, pub); res.Result != VerdictInvalid || res.FirstBadSequence != int64(k) {
			t.Fatalf("torn line %d: %+v", k, res)
		}
	}
	misplaced := append([][]byte{}, lines[n])
	misplaced = append(misplaced, lines[:n]...)
	if res := VerifyExport(misplaced, pub); res.Result != VerdictInvalid || res.FirstBadSequence != 1 {
		t.Fatalf("checkpoint first: %+v", res)
	}
	twice := append(append([][]byte{}, lines...), lines[n])
	if res := VerifyExport(twice, pub); res.Result != VerdictInvalid {
		t.Fatalf("two checkpoint lines: %+v", res)
	}
	// An earlier break wins over a later unparsable line.
	early := append([][]byte{}, lines...)
	early[2], early[3] = early[3], early[2]
	early[10] = []byte("{")
	if res := VerifyExport(early, pub); res.Result != VerdictInvalid || res.FirstBadSequence != 3 || res.Reason != ReasonReorder {
		t.Fatalf("swap before a torn line: %+v", res)
	}
}

// FuzzRecordRoundTrip: any JSON object body made into a record, written,
// read back and written again keeps its bytes and digest, and the chain
// still verifies.
func FuzzRecordRoundTrip(f *testing.F) {
	for _, s := range []string{`{}`, `{"type":"NodeStatusChanged","data":{"from":"PENDING","to":"RUNNING","received":1}}`,
		`{"a":[1e21,1e-7,-0,0.1,"\u2028\ud83d\ude00"],"b":{"\ufb33":null,"":true}}`, `{"n":9007199254740993,"x":1E400}`,
		`{"s":"\u0000\u001f\"\\/"}`} {
		f.Add([]byte(s), int64(1), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, nanos int64, decision bool) {
		v, err := decodeJSON(data)
		if err != nil {
			return
		}
		body, ok := v.(map[string]any)
		if !ok {
			return
		}
		kind := KindEvent
		if decision {
			kind = KindDecision
		}
		at := time.Unix(1_800_000_000, 0).Add(time.Duration(nanos % int64(100*365*24*time.Hour)))
		first, err := Next(nil, "e-fuzz", kind, at, map[string]any{"type": "ExecutionStarted"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Next(&first, "e-fuzz", kind, at, body)
		if err != nil {
			return // a body with no canonical form is refused, never half-written
		}
		line, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseRecord(line)
		if err != nil {
			t.Fatalf("%s does not parse: %v", line, err)
		}
		again, err := back.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(line) != sha256.Sum256(again) {
			t.Fatalf("bytes changed:\n%s\n%s", line, again)
		}
		if d, err := back.ComputeDigest(); err != nil || d != r.Digest {
			t.Fatalf("digest %s, was %s (%v)", d, r.Digest, err)
		}
		if rep := Verify([]Record{first, back}); !rep.Valid {
			t.Fatalf("round-tripped chain: %+v", rep)
		}
	})
}

// TestRecordRoundTripCorpus: 10,000 records of random bodies keep bytes
// and digest through write → read → write (the golden-corpus half of T23
// that runs on every PR).
func TestRecordRoundTripCorpus(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 10))
	var prev *Record
	for i := range 10_000 {
		body, _ := randomValue(rng, 0).(map[string]any)
		if body == nil {
			body = map[string]any{"v": randomValue(rng, 1)}
		}
		r, err := Next(prev, "e-corpus", KindEvent, t0.Add(time.Duration(i)*time.Microsecond), body)
		if err != nil {
			continue // no canonical form: refused
		}
		line, _ := r.MarshalJSON()
		back, err := ParseRecord(line)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		again, _ := back.MarshalJSON()
		if !bytes.Equal(line, again) {
			t.Fatalf("record %d changed:\n%s\n%s", i, line, again)
		}
		prev = &back
	}
}
