package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/fault"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestRecordGolden pins the line form and the digest: the hex values were
// computed independently (Python hashlib over the hand-written canonical
// text), so another language reproduces them from this description.
func TestRecordGolden(t *testing.T) {
	first, err := Next(nil, "e-1", KindEvent, t0.Add(600*time.Millisecond),
		map[string]any{"type": "ExecutionStarted", "seq": 1, "at": "2026-03-01T12:00:00.5Z", "actor": "engine"})
	if err != nil {
		t.Fatal(err)
	}
	const firstDigest = "sha256:10a77290e704bac662f3c375758c10e91261f1f42dc57210c71952bcfdcbd772"
	wantLine := `{"digest":"` + firstDigest + `","event":{"actor":"engine","at":"2026-03-01T12:00:00.5Z","seq":1,` +
		`"type":"ExecutionStarted"},"executionId":"e-1","kind":"event","observedAt":"2026-03-01T12:00:00.600000000Z",` +
		`"schemaVersion":1,"sequence":1}`
	line, err := json.Marshal(first)
	if err != nil {
		t.Fatal(err)
	}
	if string(line) != wantLine || first.Digest != firstDigest {
		t.Fatalf("line\n got %s\nwant %s", line, wantLine)
	}
	// A non-UTC observedAt is stored in UTC.
	second, err := Next(&first, "e-1", KindDecision, t0.Add(time.Second).In(time.FixedZone("x", 3600)),
		map[string]any{"type": "OperatorCommand", "command": "PAUSE", "actor": "alice", "channel": "rest", "cause": "cmd-7"})
	if err != nil {
		t.Fatal(err)
	}
	if second.Sequence != 2 || second.PreviousDigest != firstDigest ||
		second.Digest != "sha256:e9e0fe20729c047e3e05c6ed397e3544be251cdbe49614771bf627a032b063fd" {
		t.Fatalf("second record: %+v", second)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	recs := buildChain(t, rand.New(rand.NewPCG(5, 6)), "e-rt", 40)
	for _, r := range recs {
		line, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseRecord(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		again, err := back.MarshalJSON()
		if err != nil || !bytes.Equal(line, again) {
			t.Fatalf("line changed:\n%s\n%s", line, again)
		}
		if d, err := back.ComputeDigest(); err != nil || d != r.Digest {
			t.Fatalf("digest %s after parse, %s before", d, r.Digest)
		}
		var viaJSON Record
		if err := json.Unmarshal(line, &viaJSON); err != nil || viaJSON.Digest != r.Digest {
			t.Fatalf("UnmarshalJSON: %v", err)
		}
	}
}

// TestNextCopiesBody: the record owns its body, so a caller changing its map
// afterwards cannot make the record disagree with its digest.
func TestNextCopiesBody(t *testing.T) {
	body := map[string]any{"type": "X", "data": map[string]any{"n": 1}}
	r, err := Next(nil, "e", KindEvent, t0, body)
	if err != nil {
		t.Fatal(err)
	}
	body["type"] = "Y"
	body["data"].(map[string]any)["n"] = 2
	if d, _ := r.ComputeDigest(); d != r.Digest {
		t.Fatal("the record shares its body with the caller")
	}
}

func TestNextRefuses(t *testing.T) {
	first, _ := Next(nil, "e", KindEvent, t0, map[string]any{})
	cases := map[string]func() (Record, error){
		"empty execution": func() (Record, error) { return Next(nil, "", KindEvent, t0, map[string]any{}) },
		"bad kind":        func() (Record, error) { return Next(nil, "e", "note", t0, map[string]any{}) },
		"zero time":       func() (Record, error) { return Next(nil, "e", KindEvent, time.Time{}, map[string]any{}) },
		"far time":        func() (Record, error) { return Next(nil, "e", KindEvent, t0.AddDate(9000, 0, 0), map[string]any{}) },
		"nil body":        func() (Record, error) { return Next(nil, "e", KindDecision, t0, nil) },
		"NaN":             func() (Record, error) { return Next(nil, "e", KindEvent, t0, map[string]any{"x": math.NaN()}) },
		"bad UTF-8":       func() (Record, error) { return Next(nil, "e", KindEvent, t0, map[string]any{"x": "\xff"}) },
		"other execution": func() (Record, error) { return Next(&first, "f", KindEvent, t0, map[string]any{}) },
		"undigested prev": func() (Record, error) {
			p := first
			p.Digest = ""
			return Next(&p, "e", KindEvent, t0, map[string]any{})
		},
	}
	for name, c := range cases {
		if _, err := c(); err == nil || !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%s: got %v, want an ErrInvalid", name, err)
		}
	}
}

func TestParseRecordRefuses(t *testing.T) {
	good, err := Next(nil, "e", KindEvent, t0, map[string]any{"type": "X"})
	if err != nil {
		t.Fatal(err)
	}
	line, _ := good.MarshalJSON()
	if _, err := ParseRecord(line); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		_ = json.Unmarshal(line, &m)
		f(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	d := good.Digest
	cases := map[string]string{
		"not JSON":          `{"schemaVersion":1`,
		"not an object":     `[1]`,
		"unknown member":    edit(func(m map[string]any) { m["extra"] = true }),
		"duplicate member":  strings.Replace(string(line), `"kind":"event"`, `"kind":"event","kind":"event"`, 1),
		"no digest":         edit(func(m map[string]any) { delete(m, "digest") }),
		"upper-case digest": edit(func(m map[string]any) { m["digest"] = strings.ToUpper(d) }),
		"short digest":      edit(func(m map[string]any) { m["digest"] = d[:40] }),
		"bad previous":      edit(func(m map[string]any) { m["previousDigest"] = "md5:00" }),
		"null previous":     edit(func(m map[string]any) { m["previousDigest"] = nil }),
		"zero sequence":     edit(func(m map[string]any) { m["sequence"] = 0 }),
		"fraction sequence": edit(func(m map[string]any) { m["sequence"] = 1.5 }),
		"string sequence":   edit(func(m map[string]any) { m["sequence"] = "1" }),
		"huge sequence":     edit(func(m map[string]any) { m["sequence"] = 1e17 }),
		"schema 0":          edit(func(m map[string]any) { m["schemaVersion"] = 0 }),
		"empty execution":   edit(func(m map[string]any) { m["executionId"] = "" }),
		"bad kind":          edit(func(m map[string]any) { m["kind"] = "note" }),
		"offset time":       edit(func(m map[string]any) { m["observedAt"] = "2026-03-01T13:00:00.000000000+01:00" }),
		"short time":        edit(func(m map[string]any) { m["observedAt"] = "2026-03-01T12:00:00Z" }),
		"no time":           edit(func(m map[string]any) { delete(m, "observedAt") }),
		"both bodies":       edit(func(m map[string]any) { m["decision"] = map[string]any{} }),
		"no body":           edit(func(m map[string]any) { delete(m, "event") }),
		"body of the other": edit(func(m map[string]any) { m["decision"] = m["event"]; delete(m, "event") }),
		"array body":        edit(func(m map[string]any) { m["event"] = []any{} }),
		"null body":         edit(func(m map[string]any) { m["event"] = nil }),
	}
	for name, l := range cases {
		if _, err := ParseRecord([]byte(l)); err == nil || !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%s: %s parsed (err %v)", name, l, err)
		}
	}
	// A later schema version parses, so Verify can name it.
	if _, err := ParseRecord([]byte(edit(func(m map[string]any) { m["schemaVersion"] = 2 }))); err != nil {
		t.Errorf("schemaVersion 2: %v", err)
	}
}

// buildChain makes a clean journal of n records: engine events with the
// outbox's shape, and now and then an operator decision.
func buildChain(t testing.TB, rng *rand.Rand, execID string, n int) []Record {
	t.Helper()
	recs := make([]Record, 0, n)
	var prev *Record
	nodes := []string{"a", "b", "c", ""}
	for i := range n {
		at := t0.Add(time.Duration(i) * 7 * time.Millisecond)
		node := nodes[rng.IntN(len(nodes))]
		var kind Kind
		var body map[string]any
		if rng.IntN(5) == 0 {
			kind = KindDecision
			body = map[string]any{"type": "OperatorCommand", "command": "PAUSE", "nodeId": node, "actor": "alice",
				"channel": "rest", "cause": map[string]any{"commandId": "cmd-" + string(rune('a'+i%26))}}
		} else {
			kind = KindEvent
			body = map[string]any{"seq": i + 1, "type": "NodeStatusChanged", "at": at.Format(time.RFC3339Nano),
				"sessionId": "s-1", "workflowId": "w-1", "executionId": execID, "nodeId": node, "actor": "engine",
				"data": map[string]any{"from": "PENDING", "to": "RUNNING", "received": rng.IntN(90) + 10,
					"emitted": rng.IntN(100), "ratio": rng.Float64()}}
		}
		r, err := Next(prev, execID, kind, at.Add(time.Duration(rng.IntN(1000))*time.Microsecond), body)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
		prev = &r
	}
	return recs
}

// clone deep-copies records through their line form.
func clone(t testing.TB, recs []Record) []Record {
	t.Helper()
	out := make([]Record, len(recs))
	for i, r := range recs {
		line, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = ParseRecord(line); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
