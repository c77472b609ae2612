package journal

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

const chainLen = 50

func serverKey(t testing.TB, seed byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	return priv.Public().(ed25519.PublicKey), priv
}

// fixture is a clean 50-record journal and the server's checkpoint of it.
func fixture(t *testing.T) ([]Record, Checkpoint, ed25519.PublicKey) {
	t.Helper()
	recs := buildChain(t, rand.New(rand.NewPCG(7, 8)), "e-tamper", chainLen)
	pub, priv := serverKey(t, 1)
	last := recs[len(recs)-1]
	cp, err := SignCheckpoint(priv, last.ExecutionID, last.Sequence, last.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if res := VerifyCheckpoint(recs, cp, pub); res.Result != VerdictValid {
		t.Fatalf("clean fixture: %+v", res)
	}
	return recs, cp, pub
}

// expectBad checks that Verify names firstBad and reason, reports the record
// before it as the last good one, and that VerifyCheckpoint says INVALID with
// the same answer.
func expectBad(t *testing.T, name string, recs []Record, cp Checkpoint, pub ed25519.PublicKey, firstBad int64, reason Reason) {
	t.Helper()
	rep := Verify(recs)
	wantTip := ""
	if firstBad > 1 {
		wantTip = recs[firstBad-2].Digest
	}
	if rep.Valid || rep.FirstBadSequence != firstBad || rep.Reason != reason || rep.Sequence != firstBad-1 || rep.ChainTip != wantTip {
		t.Errorf("%s: got %+v; want first bad %d, %s", name, rep, firstBad, reason)
		return
	}
	if res := VerifyCheckpoint(recs, cp, pub); res.Result != VerdictInvalid || res.Reason != reason || res.FirstBadSequence != firstBad {
		t.Errorf("%s: VerifyCheckpoint %+v", name, res)
	}
}

// TestTamperFlipByte: one byte flipped in an event or decision value, in the
// exported line, at every position: a digest mismatch there.
func TestTamperFlipByte(t *testing.T) {
	orig, cp, pub := fixture(t)
	cases := 0
	for k := 1; k <= chainLen; k++ {
		for _, target := range []string{`"actor":"`, `"type":"`, `"ratio":0.`, `"cause":{"commandId":"cmd-`} {
			lines := exportLines(t, orig)
			line := lines[k-1]
			i := bytes.Index(line, []byte(target))
			if i < 0 {
				continue
			}
			line[i+len(target)] ^= 0x01 // 'e'→'d', '1'→'0', …: still valid JSON
			recs := parseLines(t, lines)
			expectBad(t, fmt.Sprintf("flip %s in %d", target, k), recs, cp, pub, int64(k), ReasonDigestMismatch)
			cases++
		}
	}
	if cases < 2*chainLen {
		t.Fatalf("only %d flips", cases)
	}
}

// TestTamperSwap: every pair of records swapped: a reorder at the earlier one.
func TestTamperSwap(t *testing.T) {
	orig, cp, pub := fixture(t)
	for a := 1; a <= chainLen; a++ {
		for b := a + 1; b <= chainLen; b++ {
			recs := slices.Clone(orig)
			recs[a-1], recs[b-1] = recs[b-1], recs[a-1]
			expectBad(t, fmt.Sprintf("swap %d,%d", a, b), recs, cp, pub, int64(a), ReasonReorder)
		}
	}
}

// TestTamperDelete: every record but the last deleted: a gap where it was.
// (Deleting the last is a cut tail: see TestTamperTruncate.)
func TestTamperDelete(t *testing.T) {
	orig, cp, pub := fixture(t)
	for k := 1; k < chainLen; k++ {
		recs := slices.Delete(slices.Clone(orig), k-1, k)
		expectBad(t, fmt.Sprintf("delete %d", k), recs, cp, pub, int64(k), ReasonGap)
	}
}

// TestTamperInsert: a forged record inserted before every position, in four
// forms, from crude to careful.
func TestTamperInsert(t *testing.T) {
	orig, cp, pub := fixture(t)
	body := map[string]any{"type": "NodeStatusChanged", "nodeId": "a", "actor": "mallory",
		"data": map[string]any{"from": "RUNNING", "to": "SUCCESS"}}
	for k := 1; k <= chainLen; k++ {
		insert := func(f Record) []Record { return slices.Insert(slices.Clone(orig), k-1, f) }

		// A copy of record k with another body and the old digest.
		crude := clone(t, orig[k-1:k])[0]
		crude.Event, crude.Decision, crude.Kind = body, nil, KindEvent
		expectBad(t, fmt.Sprintf("crude insert %d", k), insert(crude), cp, pub, int64(k), ReasonDigestMismatch)

		// A self-consistent record that names a previous digest nobody has.
		unlinked, err := Next(nil, orig[0].ExecutionID, KindEvent, orig[k-1].ObservedAt, body)
		if err != nil {
			t.Fatal(err)
		}
		unlinked.Sequence, unlinked.PreviousDigest = int64(k), "sha256:"+fmt.Sprintf("%064x", k)
		if unlinked.Digest, err = unlinked.ComputeDigest(); err != nil {
			t.Fatal(err)
		}
		expectBad(t, fmt.Sprintf("unlinked insert %d", k), insert(unlinked), cp, pub, int64(k), ReasonBrokenLink)

		// A record that takes a sequence already used further on.
		dup := clone(t, orig[k-1:k])[0]
		dup.Sequence = int64(k + 1)
		if dup.Digest, err = dup.ComputeDigest(); err != nil {
			t.Fatal(err)
		}
		expectBad(t, fmt.Sprintf("early-sequence insert %d", k), insert(dup), cp, pub, int64(k), ReasonReorder)

		// A careful forgery: sequence k, linked to k-1, digest right. It
		// passes; the original k after it does not.
		var prev *Record
		if k > 1 {
			prev = &orig[k-2]
		}
		careful, err := Next(prev, orig[0].ExecutionID, KindEvent, orig[k-1].ObservedAt, body)
		if err != nil {
			t.Fatal(err)
		}
		expectBad(t, fmt.Sprintf("careful insert %d", k), insert(careful), cp, pub, int64(k+1), ReasonReorder)
	}
}

// TestTamperExecution: executionId changed on any one record, with or
// without its digest recomputed: a wrong execution there.
func TestTamperExecution(t *testing.T) {
	orig, cp, pub := fixture(t)
	for k := 1; k <= chainLen; k++ {
		for _, redigest := range []bool{false, true} {
			recs := clone(t, orig)
			recs[k-1].ExecutionID = "e-other"
			if redigest {
				recs[k-1].Digest, _ = recs[k-1].ComputeDigest()
			}
			expectBad(t, fmt.Sprintf("execution %d (redigest %v)", k, redigest), recs, cp, pub, int64(k), ReasonWrongExecution)
		}
	}
}

func TestTamperSchemaVersion(t *testing.T) {
	orig, cp, pub := fixture(t)
	for k := 1; k <= chainLen; k++ {
		recs := clone(t, orig)
		recs[k-1].SchemaVersion = 2
		expectBad(t, fmt.Sprintf("schema %d", k), recs, cp, pub, int64(k), ReasonWrongSchemaVersion)
	}
}

// TestTamperReplace: record k replaced by a careful forgery linked to k-1:
// the chain breaks at k+1; replacing the last record needs the checkpoint.
func TestTamperReplace(t *testing.T) {
	orig, cp, pub := fixture(t)
	for k := 1; k <= chainLen; k++ {
		var prev *Record
		if k > 1 {
			prev = &orig[k-2]
		}
		forged, err := Next(prev, orig[0].ExecutionID, KindDecision, orig[k-1].ObservedAt, map[string]any{"type": "Approval"})
		if err != nil {
			t.Fatal(err)
		}
		recs := slices.Clone(orig)
		recs[k-1] = forged
		if k < chainLen {
			expectBad(t, fmt.Sprintf("replace %d", k), recs, cp, pub, int64(k+1), ReasonBrokenLink)
			continue
		}
		if rep := Verify(recs); !rep.Valid {
			t.Fatalf("replaced tail: %+v", rep)
		}
		if res := VerifyCheckpoint(recs, cp, pub); res.Result != VerdictInvalid || res.Reason != ReasonCheckpointMismatch {
			t.Errorf("replaced tail: %+v", res)
		}
	}
}

// TestTamperTruncate: a cut tail keeps the chain valid; the checkpoint says
// INVALID and where the journal should go on.
func TestTamperTruncate(t *testing.T) {
	orig, cp, pub := fixture(t)
	for m := 0; m < chainLen; m++ {
		recs := orig[:m]
		if rep := Verify(recs); !rep.Valid || rep.Sequence != int64(m) {
			t.Fatalf("truncated to %d: %+v", m, rep)
		}
		res := VerifyCheckpoint(recs, cp, pub)
		if res.Result != VerdictInvalid || res.Reason != ReasonCheckpointMismatch || res.FirstBadSequence != int64(m+1) {
			t.Errorf("truncated to %d: %+v", m, res)
		}
	}
}

// TestTamperRecompute: a record edited and every digest from it on
// recomputed (or the chain rebuilt without a record): the chain verifies, the
// checkpoint does not match, and a checkpoint re-signed with another key does
// not verify: never VALID.
func TestTamperRecompute(t *testing.T) {
	orig, cp, pub := fixture(t)
	_, attacker := serverKey(t, 2)
	for k := 1; k <= chainLen; k++ {
		for _, drop := range []bool{false, true} {
			recs := rebuild(t, orig, k, drop)
			if rep := Verify(recs); !rep.Valid {
				t.Fatalf("rebuilt from %d: %+v", k, rep)
			}
			res := VerifyCheckpoint(recs, cp, pub)
			if res.Result != VerdictInvalid || res.Reason != ReasonCheckpointMismatch {
				t.Errorf("rebuilt from %d (drop %v): %+v", k, drop, res)
			}
			last := recs[len(recs)-1]
			forgedCp, err := SignCheckpoint(attacker, last.ExecutionID, last.Sequence, last.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if res := VerifyCheckpoint(recs, forgedCp, pub); res.Result != VerdictUnanchored || res.Reason != ReasonUnknownKey {
				t.Errorf("rebuilt from %d, re-signed: %+v", k, res)
			}
			// Naming the server's key id does not help the forger.
			forgedCp.KeyID = cp.KeyID
			if res := VerifyCheckpoint(recs, forgedCp, pub); res.Result != VerdictUnanchored || res.Reason != ReasonBadSignature {
				t.Errorf("rebuilt from %d, re-signed under the server's key id: %+v", k, res)
			}
			forgedCp.KeyID = ""
			if res := VerifyCheckpoint(recs, forgedCp, pub); res.Result != VerdictUnanchored || res.Reason != ReasonBadSignature {
				t.Errorf("rebuilt from %d, re-signed without a key id: %+v", k, res)
			}
			if res := VerifyCheckpoint(recs, Checkpoint{}, pub); res.Result != VerdictUnanchored {
				t.Errorf("rebuilt from %d, no checkpoint: %+v", k, res)
			}
		}
	}
}

// rebuild edits record k (or drops it) and recomputes the chain from there.
func rebuild(t *testing.T, orig []Record, k int, drop bool) []Record {
	t.Helper()
	recs := clone(t, orig[:k-1])
	src := clone(t, orig[k-1:])
	if drop {
		src = src[1:]
	} else {
		body := src[0].Event
		if body == nil {
			body = src[0].Decision
		}
		body["actor"] = "mallory"
	}
	for _, r := range src {
		var prev *Record
		if len(recs) > 0 {
			prev = &recs[len(recs)-1]
		}
		body := r.Event
		if r.Kind == KindDecision {
			body = r.Decision
		}
		n, err := Next(prev, r.ExecutionID, r.Kind, r.ObservedAt, body)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, n)
	}
	return recs
}

// TestTamperAppend: a careful record appended after the checkpoint.
func TestTamperAppend(t *testing.T) {
	orig, cp, pub := fixture(t)
	extra, err := Next(&orig[len(orig)-1], orig[0].ExecutionID, KindDecision, orig[len(orig)-1].ObservedAt,
		map[string]any{"type": "Approval", "actor": "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	recs := append(slices.Clone(orig), extra)
	res := VerifyCheckpoint(recs, cp, pub)
	if res.Result != VerdictInvalid || res.Reason != ReasonCheckpointMismatch || res.FirstBadSequence != chainLen+1 {
		t.Fatalf("appended: %+v", res)
	}
}

func TestCheckpointAnchoring(t *testing.T) {
	orig, cp, pub := fixture(t)
	otherPub, _ := serverKey(t, 3)
	badSig := cp
	badSig.Signature = slices.Clone(cp.Signature)
	badSig.Signature[5] ^= 0x40
	shortSig := cp
	shortSig.Signature = cp.Signature[:10]
	edited := cp
	edited.Sequence = 49
	unnamed := cp
	unnamed.KeyID = ""
	wrongID := cp
	wrongID.KeyID = KeyID(otherPub)
	cases := []struct {
		name   string
		cp     Checkpoint
		key    ed25519.PublicKey
		want   Verdict
		reason Reason
	}{
		{"good", cp, pub, VerdictValid, ""},
		{"none", Checkpoint{}, pub, VerdictUnanchored, ReasonNoCheckpoint},
		{"no key", cp, nil, VerdictUnanchored, ReasonNoPublicKey},
		{"short key", cp, pub[:16], VerdictUnanchored, ReasonNoPublicKey},
		{"other key", cp, otherPub, VerdictUnanchored, ReasonUnknownKey},
		{"other key, no key id", unnamed, otherPub, VerdictUnanchored, ReasonBadSignature},
		{"no key id (signed before keys were named)", unnamed, pub, VerdictValid, ""},
		{"another key's id", wrongID, pub, VerdictUnanchored, ReasonUnknownKey},
		{"flipped signature", badSig, pub, VerdictUnanchored, ReasonBadSignature},
		{"short signature", shortSig, pub, VerdictUnanchored, ReasonBadSignature},
		{"edited checkpoint", edited, pub, VerdictUnanchored, ReasonBadSignature},
	}
	for _, c := range cases {
		res := VerifyCheckpoint(orig, c.cp, c.key)
		if res.Result != c.want || res.Reason != c.reason {
			t.Errorf("%s: %+v", c.name, res)
		}
		if res.Sequence != chainLen || res.ChainTip != orig[chainLen-1].Digest {
			t.Errorf("%s: chain position %d %s", c.name, res.Sequence, res.ChainTip)
		}
	}
	// Validly signed, but for another execution, or for an earlier point.
	_, priv := serverKey(t, 1)
	other, _ := SignCheckpoint(priv, "e-other", chainLen, orig[chainLen-1].Digest)
	if res := VerifyCheckpoint(orig, other, pub); res.Result != VerdictInvalid || res.Reason != ReasonCheckpointMismatch {
		t.Errorf("other execution: %+v", res)
	}
	early, _ := SignCheckpoint(priv, orig[0].ExecutionID, 20, orig[19].Digest)
	if res := VerifyCheckpoint(orig, early, pub); res.Result != VerdictInvalid || res.FirstBadSequence != 21 {
		t.Errorf("early checkpoint: %+v", res)
	}
	wrongMid, _ := SignCheckpoint(priv, orig[0].ExecutionID, 20, orig[18].Digest)
	if res := VerifyCheckpoint(orig, wrongMid, pub); res.Result != VerdictInvalid || res.FirstBadSequence != 0 {
		t.Errorf("wrong mid checkpoint: %+v", res)
	}
	// A broken chain is INVALID whatever the checkpoint says.
	broken := slices.Delete(slices.Clone(orig), 3, 4)
	if res := VerifyCheckpoint(broken, Checkpoint{}, nil); res.Result != VerdictInvalid || res.Reason != ReasonGap {
		t.Errorf("broken, unanchored: %+v", res)
	}
	// An empty journal has nothing to anchor.
	if res := VerifyCheckpoint(nil, Checkpoint{}, pub); res.Result != VerdictUnanchored {
		t.Errorf("empty: %+v", res)
	}
	if rep := Verify(nil); !rep.Valid || rep.Sequence != 0 {
		t.Errorf("empty: %+v", rep)
	}
}

func TestSignCheckpointRefuses(t *testing.T) {
	_, priv := serverKey(t, 1)
	d := "sha256:" + fmt.Sprintf("%064x", 1)
	for name, f := range map[string]func() (Checkpoint, error){
		"no key":      func() (Checkpoint, error) { return SignCheckpoint(nil, "e", 1, d) },
		"no exec":     func() (Checkpoint, error) { return SignCheckpoint(priv, "", 1, d) },
		"sequence 0":  func() (Checkpoint, error) { return SignCheckpoint(priv, "e", 0, d) },
		"bad digest":  func() (Checkpoint, error) { return SignCheckpoint(priv, "e", 1, "sha256:xyz") },
		"bad UTF-8":   func() (Checkpoint, error) { return SignCheckpoint(priv, "\xff", 1, d) },
		"huge number": func() (Checkpoint, error) { return SignCheckpoint(priv, "e", 1<<60, d) },
	} {
		if _, err := f(); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
	payload, _ := CheckpointPayload("e-1", 7, d)
	if want := `{"digest":"` + d + `","executionId":"e-1","sequence":7}`; string(payload) != want {
		t.Errorf("payload %s", payload)
	}
}

// TestCleanJournals: 1,000 clean journals of 1 to 100 records, each through
// its NDJSON export and back, all VALID with the server's checkpoint.
func TestCleanJournals(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	pub, priv := serverKey(t, 1)
	falsePositives := 0
	for i := range 1000 {
		n := 1 + rng.IntN(100)
		recs := parseLines(t, exportLines(t, buildChain(t, rng, fmt.Sprintf("e-%d", i), n)))
		last := recs[n-1]
		cp, err := SignCheckpoint(priv, last.ExecutionID, last.Sequence, last.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if res := VerifyCheckpoint(recs, cp, pub); res.Result != VerdictValid || res.Sequence != int64(n) {
			falsePositives++
			t.Errorf("journal %d (%d records): %+v", i, n, res)
		}
	}
	if falsePositives != 0 {
		t.Fatalf("%d false positives in 1,000 clean journals", falsePositives)
	}
}

func exportLines(t testing.TB, recs []Record) [][]byte {
	t.Helper()
	lines := make([][]byte, len(recs))
	for i, r := range recs {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = b
	}
	return lines
}

func parseLines(t testing.TB, lines [][]byte) []Record {
	t.Helper()
	recs := make([]Record, len(lines))
	for i, l := range lines {
		r, err := ParseRecord(l)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		recs[i] = r
	}
	return recs
}

// TestVerifyMalformed: records built by hand, not by Next or ParseRecord,
// with a shape no record can have.
func TestVerifyMalformed(t *testing.T) {
	orig, _, _ := fixture(t)
	for name, edit := range map[string]func(r *Record){
		"no body":     func(r *Record) { r.Event, r.Decision = nil, nil },
		"both bodies": func(r *Record) { r.Event, r.Decision = map[string]any{}, map[string]any{} },
		"bad kind":    func(r *Record) { r.Kind = "note" },
	} {
		recs := clone(t, orig)
		edit(&recs[9])
		if rep := Verify(recs); rep.Valid || rep.FirstBadSequence != 10 || rep.Reason != ReasonMalformed {
			t.Errorf("%s: %+v", name, rep)
		}
	}
}

func BenchmarkNextAndVerify(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		recs := buildChain(b, rng, "e-bench", 100)
		if rep := Verify(recs); !rep.Valid {
			b.Fatal(rep)
		}
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "records/s")
}
