package web_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/adapters/web/webtest"
	"github.com/yukta/yukta/domain/journal"
)

// TestJournalVerifierAgreesWithGo runs the console's in-browser journal
// verifier (web/src/pages/journal/verify.ts, bundled for Node by esbuild,
// with Node's WebCrypto) on journals the Go code writes and signs
// (domain/journal) and on tampered copies of them, and requires the same
// verdict, reason, first bad sequence and chain tip as the Go verifier
// (journal.VerifyExportKeys, what the server and `yukta journal verify`
// answer). The journal holds what breaks naive verifiers: floats from random
// bits, integers beyond 2^53 that the digest covers exactly, control
// characters, U+2028, surrogate pairs and member names that sort differently
// in UTF-16 than in UTF-8.
func TestJournalVerifierAgreesWithGo(t *testing.T) {
	dir, node := webtest.Prepare(t)
	rng := rand.New(rand.NewPCG(24, 1))
	seedA, seedB := make([]byte, 32), make([]byte, 32)
	for i := range seedA {
		seedA[i], seedB[i] = byte(rng.Uint32()), byte(rng.Uint32())
	}
	keyA, keyB := ed25519.NewKeyFromSeed(seedA), ed25519.NewKeyFromSeed(seedB)
	answer := func(keys ...ed25519.PrivateKey) string {
		if len(keys) == 0 {
			return ""
		}
		type entry struct {
			KeyID     string `json:"keyId"`
			PublicKey string `json:"publicKey"`
		}
		var list []entry
		for _, k := range keys {
			pub := k.Public().(ed25519.PublicKey)
			list = append(list, entry{journal.KeyID(pub), base64.StdEncoding.EncodeToString(pub)})
		}
		b, _ := json.Marshal(map[string]any{"algorithm": "ed25519", "publicKey": list[0].PublicKey, "keyId": list[0].KeyID, "keys": list})
		return string(b)
	}

	const exec1 = "0193a1b2-0000-7000-8000-000000000001"
	lines, recs := tortureJournal(t, rng, exec1, 240, nil)
	cpLine := func(priv ed25519.PrivateKey, rs []journal.Record, keyID bool) string {
		last := rs[len(rs)-1]
		cp, err := journal.SignCheckpoint(priv, last.ExecutionID, last.Sequence, last.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if !keyID {
			cp.KeyID = ""
		}
		b, err := journal.CheckpointLine(cp)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cp := cpLine(keyA, recs, true)
	with := func(ls []string, tail ...string) []string { return append(append([]string(nil), ls...), tail...) }
	edit := func(i int, f func(string) string) []string {
		c := with(lines)
		c[i] = f(c[i])
		return c
	}
	bigAt := -1
	for i, l := range lines {
		if strings.Contains(l, "9007199254740993") {
			bigAt = i
			break
		}
	}
	if bigAt < 0 {
		t.Fatal("the journal holds no integer beyond 2^53")
	}
	// A chain recomputed from an edit onwards: every digest holds, the checkpoint does not.
	_, rewritten := tortureJournal(t, rand.New(rand.NewPCG(24, 1)), exec1, 240, map[int]bool{100: true})
	var rewrittenLines []string
	for _, r := range rewritten {
		b, _ := r.MarshalJSON()
		rewrittenLines = append(rewrittenLines, string(b))
	}
	flipped := []byte(cp)
	sigAt := bytes.Index(flipped, []byte(`"signature":"`)) + len(`"signature":"`)
	if flipped[sigAt] == 'A' {
		flipped[sigAt] = 'B'
	} else {
		flipped[sigAt] = 'A'
	}

	cases := []struct {
		name   string
		lines  []string
		keys   string
		result journal.Verdict
	}{
		{"untouched", with(lines, cp), answer(keyA), journal.VerdictValid},
		{"untouched, retired key listed second", with(lines, cp), answer(keyB, keyA), journal.VerdictValid},
		{"checkpoint without keyId", with(lines, cpLine(keyA, recs, false)), answer(keyB, keyA), journal.VerdictValid},
		{"lines with spaces", with(edit(3, func(s string) string { return "{ " + s[1:len(s)-1] + " }" }), cp), answer(keyA), journal.VerdictValid},
		{"numbers written otherwise", with(edit(4, func(s string) string { return strings.Replace(s, `"y":2.5`, `"y":2.50e0`, 1) }), cp), answer(keyA), journal.VerdictValid},
		{"integer beyond 2^53 written as a fraction", with(edit(bigAt, func(s string) string { return strings.Replace(s, "9007199254740993", "9007199254740993.0", 1) }), cp), answer(keyA), journal.VerdictInvalid},
		{"blank lines", append(with(lines[:5], "", "  "), with(lines[5:], cp)...), answer(keyA), journal.VerdictValid},
		{"no checkpoint", with(lines), answer(keyA), journal.VerdictUnanchored},
		{"no keys", with(lines, cp), "", journal.VerdictUnanchored},
		{"another key only", with(lines, cp), answer(keyB), journal.VerdictUnanchored},
		{"bad signature", with(lines, string(flipped)), answer(keyA), journal.VerdictUnanchored},
		{"bad signature, no keyId", with(lines, strings.Replace(string(flipped), `"keyId":"`+journal.KeyID(keyA.Public().(ed25519.PublicKey))+`",`, "", 1)), answer(keyA), journal.VerdictUnanchored},
		{"edited string", with(edit(7, func(s string) string { return strings.Replace(s, `"actor":"`, `"actor":"x`, 1) }), cp), answer(keyA), journal.VerdictInvalid},
		{"integer beyond 2^53 rounded", with(edit(bigAt, func(s string) string { return strings.Replace(s, "9007199254740993", "9007199254740992", 1) }), cp), answer(keyA), journal.VerdictInvalid},
		{"duplicate member", with(edit(9, func(s string) string { return strings.Replace(s, `"kind":"`, `"kind":"event","kind":"`, 1) }), cp), answer(keyA), journal.VerdictInvalid},
		{"wrong schema version", with(edit(11, func(s string) string { return strings.Replace(s, `"schemaVersion":1`, `"schemaVersion":2`, 1) }), cp), answer(keyA), journal.VerdictInvalid},
		{"not a record", with(edit(13, func(string) string { return `{"hello":"world"}` }), cp), answer(keyA), journal.VerdictInvalid},
		{"not JSON", with(edit(13, func(string) string { return `{"hello"` }), cp), answer(keyA), journal.VerdictInvalid},
		{"swapped", with(edit(20, func(string) string { return lines[21] }), cp), answer(keyA), journal.VerdictInvalid},
		{"deleted", with(append(with(lines[:30]), lines[31:]...), cp), answer(keyA), journal.VerdictInvalid},
		{"cut tail", with(lines[:len(lines)-3], cp), answer(keyA), journal.VerdictInvalid},
		{"records after the checkpoint", with(lines, cpLine(keyA, recs[:200], true)), answer(keyA), journal.VerdictInvalid},
		{"recomputed chain", with(rewrittenLines, cp), answer(keyA), journal.VerdictInvalid},
		{"record after the checkpoint line", with(lines[:len(lines)-1], cp, lines[len(lines)-1]), answer(keyA), journal.VerdictInvalid},
		{"two checkpoint lines", with(lines, cp, cp), answer(keyA), journal.VerdictInvalid},
		{"other execution's record", with(edit(40, func(s string) string {
			return strings.Replace(s, `"executionId":"`+exec1+`","kind"`, `"executionId":"0193a1b2-0000-7000-8000-000000000002","kind"`, 1)
		}), cp), answer(keyA), journal.VerdictInvalid},
	}

	type jsCase struct {
		Export string          `json:"export"`
		Keys   json.RawMessage `json:"keys,omitempty"`
	}
	var in []jsCase
	for _, c := range cases {
		jc := jsCase{Export: strings.Join(c.lines, "\n") + "\n"}
		if c.keys != "" {
			jc.Keys = json.RawMessage(c.keys)
		}
		in = append(in, jc)
	}
	got := runVerifier(t, dir, node, in)
	for i, c := range cases {
		var ks journal.KeySet
		if c.keys != "" {
			var err error
			if ks, err = journal.ParseKeySet([]byte(c.keys)); err != nil {
				t.Fatal(err)
			}
		}
		var bs [][]byte
		for _, l := range strings.Split(in[i].Export, "\n") {
			bs = append(bs, []byte(l))
		}
		want := journal.VerifyExportKeys(bs, ks)
		if want.Result != c.result {
			t.Fatalf("%s: the Go verifier answers %s (%s: %s), the case expects %s", c.name, want.Result, want.Reason, want.Detail, c.result)
		}
		g := got[i]
		if g.Result != string(want.Result) || g.Reason != string(want.Reason) || g.FirstBadSequence != want.FirstBadSequence ||
			g.Sequence != want.Sequence || g.ChainTip != want.ChainTip {
			t.Errorf("%s:\n browser %s seq %d tip %s firstBad %d %s: %s\n Go      %s seq %d tip %s firstBad %d %s: %s",
				c.name, g.Result, g.Sequence, g.ChainTip, g.FirstBadSequence, g.Reason, g.Detail,
				want.Result, want.Sequence, want.ChainTip, want.FirstBadSequence, want.Reason, want.Detail)
		}
	}

	// The time the verifier takes in Node for a long journal (docs/benchmarks.md).
	long, longRecs := tortureJournal(t, rand.New(rand.NewPCG(7, 7)), exec1, 10000, nil)
	out := runVerifier(t, dir, node, []jsCase{{Export: strings.Join(with(long, cpLine(keyA, longRecs, true)), "\n"), Keys: json.RawMessage(answer(keyA))}})
	if out[0].Result != "VALID" {
		t.Fatalf("the 10,000-record journal: %+v", out[0])
	}
	t.Logf("the browser's verifier (in Node %s) checked 10,000 records in %.0f ms", nodeVersion(t, node), out[0].Ms)
}

type jsOutcome struct {
	Result           string  `json:"result"`
	Sequence         int64   `json:"sequence"`
	ChainTip         string  `json:"chainTip"`
	FirstBadSequence int64   `json:"firstBadSequence"`
	Reason           string  `json:"reason"`
	Detail           string  `json:"detail"`
	Ms               float64 `json:"ms"`
}

// runVerifier bundles verify.ts for Node and runs it on the cases.
func runVerifier(t *testing.T, dir, node string, cases any) []jsOutcome {
	t.Helper()
	tmp := t.TempDir()
	runner := filepath.Join(tmp, "runner.mjs")
	src := `import { verifyExport } from ` + jsString(filepath.Join(dir, "src", "pages", "journal", "verify.ts")) + `;
import { readFileSync } from "node:fs";
const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const c of cases) {
  const v = await verifyExport(c.export, c.keys);
  out.push({ ...v.outcome, ms: v.ms });
}
console.log(JSON.stringify(out));
`
	if err := os.WriteFile(runner, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(tmp, "verify.mjs")
	// esbuild's JavaScript API, as build.mjs uses it (its bin may be a native binary or a script).
	build := `import * as esbuild from "esbuild";
await esbuild.build({ entryPoints: [` + jsString(runner) + `], bundle: true, platform: "node", format: "esm", logLevel: "warning", outfile: ` + jsString(bundle) + ` });`
	esbuild := exec.Command(node, "--input-type=module", "-e", build)
	esbuild.Dir = dir
	if out, err := esbuild.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, out)
	}
	input := filepath.Join(tmp, "cases.json")
	b, _ := json.Marshal(cases)
	if err := os.WriteFile(input, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{bundle, input}
	// Node 20 reads JSON source text (for exact integers) behind a flag that later versions ship.
	if exec.Command(node, "--harmony-json-parse-with-source", "-e", "0").Run() == nil {
		args = append([]string{"--harmony-json-parse-with-source"}, args...)
	}
	cmd := exec.CommandContext(ctx, node, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got []jsOutcome
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the verifier's output: %v\n%s", err, out)
	}
	return got
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func nodeVersion(t *testing.T, node string) string {
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// tortureJournal writes n records of one execution whose bodies hold what
// breaks naive canonical JSON; at the sequences in edited, the body differs
// (and the chain is recomputed from there on).
func tortureJournal(t *testing.T, rng *rand.Rand, execID string, n int, edited map[int]bool) ([]string, []journal.Record) {
	t.Helper()
	var lines []string
	var recs []journal.Record
	var prev *journal.Record
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		kind := journal.KindEvent
		if i%5 == 0 {
			kind = journal.KindDecision
		}
		body := map[string]any{
			"seq": json.Number(fmt.Sprint(1000 + i)), "type": "NodeStatusChanged", "actor": "key:ops", "channel": "cli",
			"at": at.Format(time.RFC3339Nano), "executionId": execID, "sessionId": "torture", "workflowId": "w",
			"data": map[string]any{
				"float":      randomFloat(rng),
				"floats":     []any{randomFloat(rng), randomFloat(rng), 1e21, 1e-7, 0.1, math.Copysign(0, -1), 5e-324},
				"big":        json.Number("9007199254740993"),
				"bigNeg":     json.Number("-123456789012345678901234567890"),
				"exactBig":   json.Number("9007199254740992"),
				"text":       randomText(rng),
				"escapes":    "<b>&\u2028\u2029\u001f\u007f \"q\" \\ é 😀",
				"\u20ac":     "euro sorts after the emoji in UTF-8, before it in UTF-16",
				"\U0001F600": true,
				"\uFB33":     nil,
				"nested":     map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{map[string]any{"z": 1, "y": json.Number("2.50")}}},
			},
		}
		if edited[i] {
			body["actor"] = "key:mallory"
		}
		if kind == journal.KindDecision {
			body["decision"] = "operator_command"
			body["cause"] = map[string]any{"action": "PAUSE", "reason": randomText(rng)}
		}
		r, err := journal.Next(prev, execID, kind, at.Add(time.Duration(i)*time.Millisecond+time.Duration(i%7)), body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
		recs = append(recs, r)
		prev = &recs[len(recs)-1]
	}
	return lines, recs
}

func randomFloat(rng *rand.Rand) float64 {
	for {
		f := math.Float64frombits(rng.Uint64())
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
}

func randomText(rng *rand.Rand) string {
	var b strings.Builder
	for range 1 + rng.IntN(12) {
		switch rng.IntN(4) {
		case 0:
			b.WriteRune(rune(rng.IntN(0x20))) // control characters
		case 1:
			b.WriteRune(rune(0x20 + rng.IntN(0x60)))
		case 2:
			b.WriteRune(rune(0xA0 + rng.IntN(0xD000)))
		default:
			b.WriteRune(rune(0x10000 + rng.IntN(0x10000))) // outside the BMP: surrogate pairs in UTF-16
		}
	}
	return b.String()
}
