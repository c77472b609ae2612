package journal

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"testing"
	"time"
)

// corpusGen is splitmix64: a generator defined here, so the corpus is the
// same on every Go version (math/rand's derived methods may change).
type corpusGen struct{ s uint64 }

func (g *corpusGen) next() uint64 {
	g.s += 0x9e3779b97f4a7c15
	z := g.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

var corpusRunes = []rune{'a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', 0, 0x1f, 0x7f, 'é', '✓', 0x2028, 0x2029, 0xfb33, 0x1F600, 0x10FFFF, 'ж', '中'}

func (g *corpusGen) str() string {
	n := int(g.next() % 8)
	r := make([]rune, n)
	for i := range r {
		r[i] = corpusRunes[g.next()%uint64(len(corpusRunes))]
	}
	return string(r)
}

func (g *corpusGen) value(depth int) any {
	k := g.next() % 8
	if depth > 2 {
		k %= 6
	}
	switch k {
	case 0:
		return nil
	case 1:
		return g.next()%2 == 0
	case 2:
		return int64(g.next()%(1<<53)) - 1<<52
	case 3:
		f := math.Float64frombits(g.next())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0.5
		}
		return f
	case 4:
		return g.str()
	case 5:
		return float64(int64(g.next()%2_000_001)-1_000_000) / 1000
	case 6:
		m := map[string]any{}
		for range int(g.next() % 4) {
			m[g.str()] = g.value(depth + 1)
		}
		return m
	default:
		a := make([]any, int(g.next()%4))
		for i := range a {
			a[i] = g.value(depth + 1)
		}
		return a
	}
}

// goldenCorpusDigest is the SHA-256 of the export of the 10,000-record
// corpus below. The same export verifies VALID with an independent RFC 8785
// implementation (the JavaScript recipe in docs/journal.md); a change here
// means records written before would no longer verify.
const goldenCorpusDigest = "e1ddeebd2780cd98d926d55d95e564a977083cdc91c4d9a8781087a746b81388"

// TestGoldenCorpus (T23): 10,000 records of generated bodies (every JSON
// kind, floats from random bits, control characters, surrogate pairs, names
// that sort differently in UTF-16) written as one journal: the export's bytes
// are pinned, and every record reads back to the same bytes and digest.
func TestGoldenCorpus(t *testing.T) {
	g := &corpusGen{s: 20261129}
	var b bytes.Buffer
	var prev *Record
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for i := range 10_000 {
		body := map[string]any{"type": "Corpus", "seq": i + 1}
		for range int(g.next()%5) + 1 {
			body[g.str()] = g.value(0)
		}
		kind := KindEvent
		if g.next()%5 == 0 {
			kind = KindDecision
		}
		r, err := Next(prev, "e-corpus", kind, at.Add(time.Duration(g.next()%1e12)), body)
		if err != nil {
			t.Fatalf("record %d: %v", i+1, err)
		}
		line, _ := r.MarshalJSON()
		back, err := ParseRecord(line)
		if err != nil {
			t.Fatalf("record %d: %v", i+1, err)
		}
		if again, _ := back.MarshalJSON(); !bytes.Equal(again, line) {
			t.Fatalf("record %d changed on a round trip:\n%s\n%s", i+1, line, again)
		}
		b.Write(line)
		b.WriteByte('\n')
		prev = &r
	}
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0x5a}, ed25519.SeedSize))
	cp, err := SignCheckpoint(priv, "e-corpus", prev.Sequence, prev.Digest)
	if err != nil {
		t.Fatal(err)
	}
	// The pinned export has the checkpoint line of a server before keys
	// were named (no keyId): it must verify as it did. The same records
	// with today's line (keyId) verify too.
	named, _ := CheckpointLine(cp)
	unnamed := cp
	unnamed.KeyID = ""
	cpl, _ := CheckpointLine(unnamed)
	records := bytes.Clone(b.Bytes())
	b.Write(cpl)
	b.WriteByte('\n')
	for _, export := range [][]byte{b.Bytes(), append(records, named...)} {
		if res := VerifyExport(bytes.Split(export, []byte("\n")), priv.Public().(ed25519.PublicKey)); res.Result != VerdictValid {
			t.Fatalf("corpus: %+v", res)
		}
	}
	if p := os.Getenv("YUKTA_JOURNAL_CORPUS_OUT"); p != "" { // for checking with another implementation
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(b.Bytes())
	if got := hex.EncodeToString(sum[:]); got != goldenCorpusDigest {
		t.Fatalf("corpus export digest %s, want %s", got, goldenCorpusDigest)
	}
}
