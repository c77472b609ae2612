package jsonvalue_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/yukta/yukta/domain/fault"
	"github.com/yukta/yukta/domain/jsonvalue"
)

func TestDecodeRefusesWithPath(t *testing.T) {
	cases := []struct {
		name, in, path, reason string
	}{
		{"escaped NUL in a value", `{"x":"a\u0000b"}`, "payload.x", "U+0000"},
		{"escaped NUL in a key", `{"a\u0000":1}`, `payload["a\x00"]`, "U+0000"},
		{"raw NUL byte", "{\"x\":\"a\x00b\"}", "payload.x", "U+0000"},
		{"invalid UTF-8", "{\"x\":[\"ok\",\"\xff\xfe\"]}", "payload.x[1]", "UTF-8"},
		{"invalid UTF-8 with escapes", "{\"x\":\"\\n\xc3\"}", "payload.x", "UTF-8"},
		{"lone high surrogate", `{"x":"\ud800"}`, "payload.x", "surrogate"},
		{"lone low surrogate", `{"x":"\udc00x"}`, "payload.x", "surrogate"},
		{"high then non-low", `{"x":"\ud800\u0041"}`, "payload.x", "surrogate"},
		{"duplicate key", `{"a":{"b":1,"b":2}}`, "payload.a.b", "twice"},
		{"number too large", `{"n":1e400}`, "payload.n", "out of range"},
		{"negative too large", `[-1e309]`, "payload[0]", "out of range"},
		{"too deep", strings.Repeat("[", 130) + strings.Repeat("]", 130), "payload" + strings.Repeat("[0]", 129), "deeper"},
		{"trailing data", `{} {}`, "payload", "after the JSON value"},
		{"empty", ``, "payload", "empty"},
		{"truncated", `{"a":`, "payload.a", "not valid JSON"},
		{"bad literal", `{"a":tru}`, "payload.a", "not valid JSON"},
		{"leading zero", `{"a":01}`, "payload.a", "not valid JSON"},
		{"raw newline in string", "{\"a\":\"x\ny\"}", "payload.a", "control character"},
		{"bad escape", `{"a":"\q"}`, "payload.a", "unknown escape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := jsonvalue.Decode([]byte(c.in), "payload")
			if err == nil {
				t.Fatalf("accepted %q as %#v", c.in, v)
			}
			var je *jsonvalue.Error
			if !errors.As(err, &je) || !errors.Is(err, fault.ErrInvalid) {
				t.Fatalf("error %v is not a *jsonvalue.Error matching ErrInvalid", err)
			}
			if je.Path != c.path {
				t.Errorf("path %q, want %q (%v)", je.Path, c.path, err)
			}
			if !strings.Contains(je.Reason, c.reason) {
				t.Errorf("reason %q does not mention %q", je.Reason, c.reason)
			}
			if strings.Contains(err.Error(), "json:") || strings.Contains(err.Error(), "interface {}") {
				t.Errorf("error %q shows Go decoder text", err)
			}
		})
	}
}

func TestDecodeKeepsValuesExact(t *testing.T) {
	in := `{"big":9007199254740993,"u":18446744073709551615,"neg":-9223372036854775808,"f":1.50,` +
		`"e":1e3,"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t","arr":[true,false,null,{}],"emoji":"😀"}`
	v, err := jsonvalue.Decode([]byte(in), "")
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	for k, want := range map[string]json.Number{"big": "9007199254740993", "u": "18446744073709551615", "neg": "-9223372036854775808", "f": "1.50", "e": "1e3"} {
		if m[k] != want {
			t.Errorf("%s = %#v, want json.Number(%s)", k, m[k], want)
		}
	}
	if want := "café 😀 \"q\" \\ / \b\f\n\r\t"; m["s"] != want {
		t.Errorf("s = %q, want %q", m["s"], want)
	}
	if !reflect.DeepEqual(m["arr"], []any{true, false, nil, map[string]any{}}) {
		t.Errorf("arr = %#v", m["arr"])
	}
	if m["emoji"] != "😀" {
		t.Errorf("emoji = %q", m["emoji"])
	}
}

// TestDecodeAllReadsOnPastRules: the rules a readable text breaks are each
// noted at their path and the read goes on (the first of repeated keys
// stays); a syntax error still ends it.
func TestDecodeAllReadsOnPastRules(t *testing.T) {
	v, rules, err := jsonvalue.DecodeAll([]byte(`{"a":1,"a":2,"b":"x\u0000","c":1e400,"d":[true]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.Path)
	}
	if strings.Join(got, " ") != "a b c" {
		t.Errorf("rules at %q, want a b c", got)
	}
	m := v.(map[string]any)
	if m["a"] != json.Number("1") || m["b"] != "x\x00" || m["c"] != json.Number("1e400") || !reflect.DeepEqual(m["d"], []any{true}) {
		t.Errorf("value %#v, want the first a, the string and number as written, and d", m)
	}
	if _, _, err := jsonvalue.DecodeAll([]byte(`{"a":1,"a":2,}`), ""); err == nil || !strings.Contains(err.Error(), "at byte 13") {
		t.Errorf("syntax error after a rule: %v, want the read ended at byte 13", err)
	}
}

func TestNumberRule(t *testing.T) {
	cases := []struct {
		in   json.Number
		want any
	}{
		{"1", int64(1)},
		{"-9223372036854775808", int64(math.MinInt64)},
		{"9223372036854775807", int64(math.MaxInt64)},
		{"9223372036854775809", uint64(1<<63 + 1)},
		{"18446744073709551615", uint64(math.MaxUint64)},
		{"18446744073709551616", float64(1 << 64)},
		{"-9223372036854775809", float64(-(1 << 63))},
		{"1.0", 1.0},
		{"1e2", 100.0},
		{"0.1", 0.1},
	}
	for _, c := range cases {
		got, err := jsonvalue.Number(c.in)
		if err != nil || got != c.want {
			t.Errorf("Number(%s) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	if _, err := jsonvalue.Number("1e400"); err == nil {
		t.Error("Number(1e400) accepted")
	}
}

func TestCheck(t *testing.T) {
	ok := map[string]any{"a": []any{"x", 1.5, json.Number("9007199254740993"), int64(3), uint64(1 << 63), nil, true}}
	if err := jsonvalue.Check(ok, "out", jsonvalue.Limits{}); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name   string
		v      any
		path   string
		reason string
	}{
		{"NUL", map[string]any{"x": "a\x00b"}, "out.x", "U+0000"},
		{"NUL key", map[string]any{"a\x00": 1.0}, `out["a\x00"]`, "U+0000"},
		{"invalid UTF-8", []any{"\xff"}, "out[0]", "UTF-8"},
		{"NaN", map[string]any{"n": math.NaN()}, "out.n", "NaN"},
		{"Inf", []any{math.Inf(-1)}, "out[0]", "Inf"},
		{"bad json.Number", []any{json.Number("0x10")}, "out[0]", "not a JSON number"},
		{"huge json.Number", []any{json.Number("1e999")}, "out[0]", "out of range"},
		{"Go struct", []any{struct{}{}}, "out[0]", "not JSON"},
	}
	for _, c := range bad {
		err := jsonvalue.Check(c.v, "out", jsonvalue.Limits{})
		var je *jsonvalue.Error
		if !errors.As(err, &je) || je.Path != c.path || !strings.Contains(je.Reason, c.reason) {
			t.Errorf("%s: got %v, want path %q mentioning %q", c.name, err, c.path, c.reason)
		}
	}
}

func TestCheckSizeStopsAtTheCap(t *testing.T) {
	s := strings.Repeat("x", 500_000)
	list := make([]any, 200) // 100 MB if encoded
	for i := range list {
		list[i] = s
	}
	err := jsonvalue.Check(map[string]any{"l": list}, "message", jsonvalue.Limits{MaxBytes: 1 << 20, What: "message", Setting: "YUKTA_MAX_MESSAGE_BYTES"})
	var je *jsonvalue.Error
	if !errors.As(err, &je) || !je.Limit || !strings.Contains(je.Reason, "1 MiB") || !strings.Contains(je.Reason, "YUKTA_MAX_MESSAGE_BYTES") {
		t.Fatalf("got %v", err)
	}
	if je.Path != "message" {
		t.Errorf("path %q, want the whole value (message)", je.Path)
	}
	// The count is a lower bound of the encoding: never above it.
	for _, v := range []any{ok(), "a\"b\\c\n", []any{1.5, "x", nil, true, map[string]any{"k": []any{}}}} {
		b, _ := json.Marshal(v)
		if got := jsonvalue.Size(v); got > len(b) || got < len(b)-8 {
			t.Errorf("Size(%s) = %d, encoding is %d bytes", b, got, len(b))
		}
	}
}

func ok() any { return map[string]any{"a": 1.0, "bb": []any{"c", false}} }

func TestCleanAndCut(t *testing.T) {
	if got := jsonvalue.Clean("a\x00b\xffc"); got != `a\u0000b`+"\uFFFD"+"c" {
		t.Errorf("Clean = %q", got)
	}
	long := strings.Repeat("é", 5000) // 10,000 bytes
	got := jsonvalue.Cut(long, 4096)
	if len(got) > 4096 || !strings.Contains(got, "cut: 4 KiB of 10000 bytes shown") || !utf8Valid(got) {
		t.Errorf("Cut gave %d bytes: …%q", len(got), got[len(got)-40:])
	}
	if jsonvalue.Cut("short", 10) != "short" {
		t.Error("Cut changed a short line")
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "?") == s }

// FuzzDecode: Decode never panics; whatever it accepts encoding/json reads
// to the same value (numbers as text), and encoding that value and decoding
// it again gives it back.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `"\ud83d\ude00"`, `{"a":1,"a":2}`, `"\u0000"`, "\"\xff\"",
		`1e400`, `[[[[]]]]`, `{"":{"":""}}`, `-0`, `9007199254740993`, ` {"k" : "v\n"} `, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := jsonvalue.Decode(data, "body")
		// DecodeAll ends only where the text cannot be read on (syntax,
		// depth, trailing data), and otherwise notes each broken rule: its
		// first is the error Decode gave, and without rules it reads the
		// same value.
		all, rules, fatal := jsonvalue.DecodeAll(data, "body")
		switch {
		case fatal != nil: // Decode may have stopped earlier, at a rule
			if err == nil {
				t.Fatalf("DecodeAll ended with %v where Decode accepted the text", fatal)
			}
		case len(rules) > 0:
			if err == nil || err.Error() != rules[0].Error() {
				t.Fatalf("DecodeAll's first rule %v, Decode's error %v", rules[0], err)
			}
		case err != nil || !reflect.DeepEqual(all, v):
			t.Fatalf("DecodeAll without rules read %#v, Decode %#v (%v)", all, v, err)
		}
		if err != nil {
			var je *jsonvalue.Error
			if !errors.As(err, &je) {
				t.Fatalf("error %v is not a *jsonvalue.Error", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted %q, which encoding/json finds invalid", data)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var std any
		if err := dec.Decode(&std); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, std) {
			t.Fatalf("Decode(%q) = %#v, encoding/json: %#v", data, v, std)
		}
		if err := jsonvalue.Check(v, "body", jsonvalue.Limits{}); err != nil {
			t.Fatalf("Check refuses what Decode accepted: %v", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := jsonvalue.Decode(b, "body")
		if err != nil || !reflect.DeepEqual(again, v) {
			t.Fatalf("round trip of %q: %#v, %v", b, again, err)
		}
	})
}
