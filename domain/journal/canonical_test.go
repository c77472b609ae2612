package journal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

// TestCanonicalCyberphoneVectors: every input of the JCS reference test data
// canonicalizes to the exact bytes of its output, whether numbers are decoded
// as json.Number or as float64.
func TestCanonicalCyberphoneVectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil || len(inputs) < 6 {
		t.Fatalf("vectors missing: %v %v", inputs, err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src := readFile(t, in)
			want := readFile(t, filepath.Join("testdata/jcs/output", filepath.Base(in)))
			v, err := decodeJSON(src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonical(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("json.Number decoding:\n got %q\nwant %q", got, want)
			}
			var f any
			if err := json.Unmarshal(src, &f); err != nil {
				t.Fatal(err)
			}
			if got, _ := Canonical(f); !bytes.Equal(got, want) {
				t.Fatalf("float64 decoding:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestCanonicalRFCSample: RFC 8785 §3.2.2's object gives §3.2.4's bytes.
func TestCanonicalRFCSample(t *testing.T) {
	want, err := hex.DecodeString(strings.Join(strings.Fields(string(readFile(t, "testdata/rfc8785/sample.hex"))), ""))
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeJSON(readFile(t, "testdata/rfc8785/sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
}

// TestCanonicalRFCSorting: RFC 8785 §3.2.3's names sort by UTF-16 code units
// (the astral emoji before U+FB33, unlike UTF-8 or code point order).
func TestCanonicalRFCSorting(t *testing.T) {
	v, err := decodeJSON(readFile(t, "testdata/rfc8785/sorting.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var values []string
	for i := 0; ; i++ {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		if s, ok := tok.(string); ok && i%2 == 0 { // '{' is token 0, then name, value, …
			values = append(values, s)
		}
	}
	want := strings.Split(strings.TrimSpace(string(readFile(t, "testdata/rfc8785/sorting.order"))), "\n")
	if strings.Join(values, "|") != strings.Join(want, "|") {
		t.Fatalf("order\n got %q\nwant %q", values, want)
	}
}

// TestNumberVectors: RFC 8785 Appendix B and the es6testfile sample lines.
func TestNumberVectors(t *testing.T) {
	f, err := os.Open("testdata/rfc8785/numbers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		hexBits, want, _ := strings.Cut(line, ",")
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		x := math.Float64frombits(bits)
		got, err := NumberString(x)
		n++
		if want == "" {
			if err == nil || !errors.Is(err, ErrNotCanonicalizable) || !errors.Is(err, fault.ErrInvalid) {
				t.Errorf("%s: want refusal, got %q, %v", hexBits, got, err)
			}
			if _, err := Canonical(x); err == nil {
				t.Errorf("%s: Canonical accepted %v", hexBits, x)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", hexBits, got, err, want)
		}
		if back, err := strconv.ParseFloat(want, 64); err != nil || back != x && !(x == 0 && back == 0) {
			t.Errorf("%s: vector %q does not read back as the value", hexBits, want)
		}
	}
	if n < 30 {
		t.Fatalf("read only %d vectors", n)
	}
}

// TestNumberFormat pins ECMAScript's notation boundaries, which Appendix B
// samples only at a few points.
func TestNumberFormat(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{1, "1"}, {-1, "-1"}, {0.1, "0.1"}, {100, "100"}, {123.456, "123.456"},
		{1e20, "100000000000000000000"}, {1e21, "1e+21"}, {1.5e21, "1.5e+21"}, {-1e21, "-1e+21"},
		{123456789012345680000, "123456789012345680000"},
		{1e-6, "0.000001"}, {1.5e-6, "0.0000015"}, {1e-7, "1e-7"}, {5e-7, "5e-7"}, {1.25e-7, "1.25e-7"},
		{-1e-7, "-1e-7"}, {0.000123, "0.000123"}, {1e300, "1e+300"}, {2.5e-300, "2.5e-300"},
		{math.Copysign(0, -1), "0"}, {4.5, "4.5"}, {0.30000000000000004, "0.30000000000000004"},
		{9007199254740993, "9007199254740992"},
	}
	for _, c := range cases {
		if got, err := NumberString(c.in); err != nil || got != c.want {
			t.Errorf("%v: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := NumberString(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestNumberRoundTrip: over random doubles, the text reads back as the same
// double and uses no more digits than Go's shortest form.
func TestNumberRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		x := math.Float64frombits(rng.Uint64())
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		s, err := NumberString(x)
		if err != nil {
			t.Fatal(err)
		}
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != x && !(x == 0 && back == 0) {
			t.Fatalf("%x: %q reads back as %v", math.Float64bits(x), s, back)
		}
		if !jsonvalue.IsNumber(s) {
			t.Fatalf("%x: %q is not JSON", math.Float64bits(x), s)
		}
	}
}

func TestCanonicalStrings(t *testing.T) {
	cases := map[string]string{
		"\x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x1e\x1f": `"\u0000\u0001\u0007\b\t\n\u000b\f\r\u001e\u001f"`,
		"\"\\/":          `"\"\\/"`,
		"\x7f\u0080":     "\"\x7f\u0080\"",
		"\u2028\u2029":   "\"\u2028\u2029\"",
		"<&>":            `"<&>"`,
		"é😀":             `"é😀"`,
		"\ufffd":         "\"\ufffd\"",
		"plain ascii 12": `"plain ascii 12"`,
	}
	for in, want := range cases {
		got, err := Canonical(in)
		if err != nil || string(got) != want {
			t.Errorf("%q: got %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []any{"\xff", map[string]any{"\xc3": 1}, []any{"ok", "\xed\xa0\x80"}} {
		_, err := Canonical(bad)
		if !errors.Is(err, ErrNotCanonicalizable) {
			t.Errorf("%q: want refusal, got %v", bad, err)
		}
	}
}

func TestCanonicalValues(t *testing.T) {
	type point struct {
		X int     `json:"x"`
		Y float32 `json:"y"`
		Z string  `json:"z,omitempty"`
	}
	cases := []struct {
		in   any
		want string
	}{
		{nil, "null"},
		{true, "true"},
		{map[string]any{}, "{}"},
		{[]any{}, "[]"},
		{map[string]any{"m": map[string]any(nil), "s": []any(nil)}, `{"m":null,"s":null}`},
		{map[string]any{"b": []any{int64(2), uint8(3), -4}, "a": json.Number("1.50")}, `{"a":1.5,"b":[2,3,-4]}`},
		{int64(1<<53 + 1), "9007199254740993"},  // exact: no double holds it
		{int64(1 << 60), "1152921504606847000"}, // a double holds it: RFC 8785's form
		{uint64(math.MaxUint64), "18446744073709551615"},
		{json.Number("9007199254740993"), "9007199254740993"},
		{json.Number("-9007199254740993"), "-9007199254740993"},
		{json.Number("10000000000000000000000"), "1e+22"}, // a double holds it
		{json.Number("123456789012345678901234567"), "123456789012345678901234567"},
		{json.Number("9007199254740993.0"), "9007199254740992"}, // not an integer literal: a double
		{json.Number("-0"), "0"},
		{[]string{"x", "y"}, `["x","y"]`},
		{map[string]string{"b": "1", "a": "2"}, `{"a":"2","b":"1"}`},
		{point{X: 1, Y: 0.1}, `{"x":1,"y":0.1}`},
		{json.RawMessage(`{"z": [1.0, 2e0], "a" : null}`), `{"a":null,"z":[1,2]}`},
		{map[string]any{"\U0001F600": 1, "\uFB33": 2, "a": 3}, "{\"a\":3,\"\U0001F600\":1,\"\uFB33\":2}"},
	}
	for _, c := range cases {
		got, err := Canonical(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("%#v: got %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []any{
		json.Number("1e400"), json.Number("NaN"), json.Number("0x10"), json.Number("1_000"), json.Number("+1"),
		json.Number(".5"), json.Number("01"), json.Number(""), math.NaN(), []any{math.Inf(1)},
		map[string]any{"a": map[string]any{"b": []any{1, math.NaN()}}}, float32(math.NaN()), make(chan int),
	} {
		if got, err := Canonical(bad); err == nil {
			t.Errorf("%#v: accepted as %s", bad, got)
		} else if !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%#v: %v does not match ErrInvalid", bad, err)
		}
	}
	_, err := Canonical(map[string]any{"a": map[string]any{"b c": []any{1, math.NaN()}}})
	if err == nil || !strings.Contains(err.Error(), `a["b c"][1]`) {
		t.Errorf("error does not locate the NaN: %v", err)
	}
}

func TestDecodeJSONRefuses(t *testing.T) {
	for _, bad := range []string{`{"a":1,"a":2}`, `{"x":{"a":1,"a":1}}`, `1 2`, `{`, `[1,]`, `"a"x`, ``,
		strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)} {
		if v, err := decodeJSON([]byte(bad)); err == nil {
			t.Errorf("%.40q: accepted as %v", bad, v)
		}
	}
}

// TestCanonicalStable: canonical → decode → canonical is byte-identical, for
// the vectors and for random documents.
func TestCanonicalStable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	docs := []any{}
	inputs, _ := filepath.Glob("testdata/jcs/input/*.json")
	for _, in := range inputs {
		v, err := decodeJSON(readFile(t, in))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, v)
	}
	for range 2000 {
		docs = append(docs, randomValue(rng, 0))
	}
	for _, d := range docs {
		first, err := Canonical(d)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeJSON(first)
		if err != nil {
			t.Fatalf("%q: %v", first, err)
		}
		second, err := Canonical(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("unstable:\n%q\n%q", first, second)
		}
		var plain any
		if err := json.Unmarshal(first, &plain); err != nil {
			t.Fatalf("canonical output is not JSON: %q: %v", first, err)
		}
		// Within I-JSON a float64 decoder reads the same numbers; integers
		// no double holds are the documented exception.
		if third, _ := Canonical(plain); !bytes.Equal(first, third) && !hasInexactInteger(back) {
			t.Fatalf("float64 decoding changes it:\n%q\n%q", first, third)
		}
	}
}

// FuzzCanonical: for any JSON text, canonical → decode → canonical keeps the
// bytes and so the digest; nothing panics.
func FuzzCanonical(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/jcs/input/*.json")
	for _, in := range inputs {
		b, _ := os.ReadFile(in)
		f.Add(b)
	}
	for _, s := range []string{`{"a":[1e21,1e-7,-0,0.1]}`, `"\u0000\ud83d\ude00"`, `[{"\ufb33":1,"\ud83d\ude00":2}]`,
		`{"seq":1,"type":"NodeStatusChanged","data":{"from":"PENDING","to":"RUNNING","received":1}}`, `1E400`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, decode := range []func([]byte) (any, error){decodeJSON, decodeStd} {
			v, err := decode(data)
			if err != nil {
				continue
			}
			first, err := Canonical(v)
			if err != nil {
				if !errors.Is(err, ErrNotCanonicalizable) {
					t.Fatalf("refusal %v is not ErrNotCanonicalizable", err)
				}
				continue
			}
			back, err := decodeJSON(first)
			if err != nil {
				t.Fatalf("canonical %q does not decode: %v", first, err)
			}
			second, err := Canonical(back)
			if err != nil {
				t.Fatalf("canonical %q does not canonicalize: %v", first, err)
			}
			if sha256.Sum256(first) != sha256.Sum256(second) {
				t.Fatalf("digest changed:\n%q\n%q", first, second)
			}
		}
	})
}

func decodeStd(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// randomValue builds a random JSON document of the kinds Canonical reads.
func randomValue(rng *rand.Rand, depth int) any {
	k := rng.IntN(10)
	if depth > 3 {
		k = rng.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return randomString(rng)
	case 3:
		for {
			x := math.Float64frombits(rng.Uint64())
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				return x
			}
		}
	case 4:
		return json.Number(strconv.FormatInt(rng.Int64N(1<<60)-1<<59, 10))
	case 5:
		return rng.IntN(1000) - 500
	case 6, 7:
		m := map[string]any{}
		for range rng.IntN(6) {
			m[randomString(rng)] = randomValue(rng, depth+1)
		}
		return m
	default:
		a := []any{}
		for range rng.IntN(5) {
			a = append(a, randomValue(rng, depth+1))
		}
		return a
	}
}

var alphabet = []rune("aAzZ09 _-\"\\/\x00\x01\x1f\x7f\u0080éö€\u2028\ufb33\uffff😀😂\U0010FFFF")

func randomString(rng *rand.Rand) string {
	var b strings.Builder
	for range rng.IntN(8) {
		b.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	if !utf8.ValidString(b.String()) {
		panic("bad alphabet")
	}
	return b.String()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompareUTF16 checks the allocation-free order against the definition:
// comparing the UTF-16 encodings.
func TestCompareUTF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sign := func(n int) int { return min(max(n, -1), 1) }
	for range 100000 {
		a, b := randomString(rng), randomString(rng)
		if rng.IntN(4) == 0 {
			b = a + randomString(rng)
		}
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := sign(compareUTF16(a, b)); got != want {
			t.Fatalf("compare(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

func BenchmarkCanonicalEvent(b *testing.B) {
	body := map[string]any{"seq": json.Number("123456"), "type": "NodeStatusChanged", "at": "2026-03-01T12:00:00.123456789Z",
		"sessionId": "s-1", "workflowId": "w-1", "executionId": "e-1", "nodeId": "fetch", "actor": "engine",
		"data": map[string]any{"from": "PENDING", "to": "RUNNING", "received": json.Number("1"), "emitted": json.Number("0")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonical(body); err != nil {
			b.Fatal(err)
		}
	}
}

// hasInexactInteger reports whether v holds an integer no double holds.
func hasInexactInteger(v any) bool {
	switch x := v.(type) {
	case json.Number:
		var b bytes.Buffer
		i, ok := new(big.Int).SetString(string(x), 10)
		return ok && writeInexactInteger(&b, i)
	case map[string]any:
		for _, e := range x {
			if hasInexactInteger(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasInexactInteger(e) {
				return true
			}
		}
	}
	return false
}
