package cli

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestYAMLToJSON(t *testing.T) {
	for _, c := range []struct{ yaml, json string }{
		{"a: 1\nb: two\nc: true\nd: ~\ne: [1, 2.5]\n", `{"a":1,"b":"two","c":true,"d":null,"e":[1,2.5]}`},
		// Numbers keep their digits: nothing goes through float64.
		{"big: 9007199254740993\nhuge: 123456789012345678901234567890\nneg: -9223372036854775809", `{"big":9007199254740993,"huge":123456789012345678901234567890,"neg":-9223372036854775809}`},
		{"f: 0.1\ng: 1e300\nh: 2.50E-3\ni: 0.30000000000000004", `{"f":0.1,"g":1e300,"h":2.50E-3,"i":0.30000000000000004}`},
		// YAML's own spellings become the JSON number with the same value.
		{"x: 0x1F\no: 0o17\nb: -0b101\nu: 1_000\np: +12\nl: 0755", `{"x":31,"o":15,"b":-5,"u":1000,"p":12,"l":493}`},
		{"a: .5\nb: 1.\nc: +1.5\nd: 007.5\ne: 1_000.25\nf: -.5e3", `{"a":0.5,"b":1.0,"c":1.5,"d":7.5,"e":1000.25,"f":-0.5e3}`},
		// Strings stay strings: quoted numbers, yes/no, dates, <&>.
		{"a: '12'\nb: yes\nc: 2001-12-14\nd: \"<&>\"\ne: !!str 3", `{"a":"12","b":"yes","c":"2001-12-14","d":"<&>","e":"3"}`},
		// Order as written; anchors and aliases expand.
		{"z: &n {k: 1}\na: *n\nm: [*n]", `{"z":{"k":1},"a":{"k":1},"m":[{"k":1}]}`},
		{"- 1\n- [a, {b: c}]", `[1,["a",{"b":"c"}]]`},
		{"s: |\n  line one\n  line two\n", `{"s":"line one\nline two\n"}`},
	} {
		got, err := yamlToJSON([]byte(c.yaml))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
			continue
		}
		if string(got) != c.json {
			t.Errorf("%q:\n got %s\nwant %s", c.yaml, got, c.json)
		}
	}
}

func TestYAMLErrorsNameLineAndColumn(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"a: 1\nb: [1,\n  c: 2", "line 1, column 1: did not find expected ',' or ']'"},
		{"a: 1\nb: 2\na: 3\n", `line 3, column 1: "a" repeats the key of line 1, column 1`},
		{"a:\n  b: .inf\n", "line 2, column 6: .inf has no JSON form"},
		{"a: !custom x\n", "line 1, column 4: the tag !custom has no JSON meaning"},
		{"? [a]\n: 1\n", "line 1, column 3: a key must be a plain value"},
		{"base: &b {x: 1}\nc:\n  <<: *b\n", "line 3, column 3: merge keys (<<) are not supported"},
		{"a: 1\n---\nb: 2\n", "line 2, column 1: a second YAML document"},
		{"a: 'open", "line 1, column 9: found unexpected end of stream"},
		{"", "empty"},
	} {
		_, err := yamlToJSON([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to contain %q", c.yaml, err, c.want)
		}
	}
	// A billion laughs stops at the budget, not at the end of memory.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		bomb += n + ": &" + n + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = n
	}
	if _, err := yamlToJSON([]byte(bomb)); err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Errorf("alias bomb: %v", err)
	}
}

func TestIsYAML(t *testing.T) {
	for _, c := range []struct {
		file, body string
		want       bool
	}{
		{"s.yaml", "{}", true}, {"s.YML", "a: 1", true}, {"s.json", "a: 1", false},
		{"-", "  {\"a\":1}", false}, {"-", "sessionId: x", true}, {"doc", "[1]", false},
	} {
		if got := isYAML(c.file, []byte(c.body)); got != c.want {
			t.Errorf("isYAML(%q, %q) = %t", c.file, c.body, got)
		}
	}
}

// FuzzYAMLToJSON: whatever the input, the conversion either fails or gives
// valid JSON, and converting that JSON again (JSON is YAML) changes nothing.
func FuzzYAMLToJSON(f *testing.F) {
	for _, s := range []string{
		"a: 1", "big: 9007199254740993", "x: 0x1F\ny: .5\nz: 1_000.5", "- [a, {b: c}]\n- ~",
		"a: &n {k: 1}\nb: *n", "s: |\n  text\n", "q: \"\\u00e9\\t<&>\"", "n: -0", "f: 1e300", "k: 0755", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := yamlToJSON(src)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%q gave invalid JSON %q", src, out)
		}
		again, err := yamlToJSON(out)
		if err != nil {
			t.Fatalf("%q gave %q, which does not convert again: %v", src, out, err)
		}
		if string(again) != string(out) {
			t.Fatalf("%q: %q then %q", src, out, again)
		}
	})
}

func TestApplyYAML(t *testing.T) {
	var got []byte
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		got = readAll(r)
		writeJSON(w, 201, map[string]any{"sessionId": "hello", "workflows": []string{"greet"}, "removedWorkflows": []string{}, "warnings": []string{}})
	})
	dir := t.TempDir()
	file := filepath.Join(dir, "hello.yaml")
	doc := "sessionId: hello\nname: Hello\nworkflows:\n  - workflowId: greet\n    nodes:\n      - {nodeId: in, type: MANUAL, config: {n: 9007199254740993}}\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, map[string]string{"YUKTA_SERVER": f.URL}, "apply", file)
	if code != 0 || !strings.Contains(out, "session: hello\n") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	want := `{"sessionId":"hello","name":"Hello","workflows":[{"workflowId":"greet","nodes":[{"nodeId":"in","type":"MANUAL","config":{"n":9007199254740993}}]}]}`
	if string(got) != want || f.requests()[0].URL.Path != "/api/sessions/hello" {
		t.Fatalf("sent %s to %s, want %s", got, f.requests()[0].URL.Path, want)
	}
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("sessionId: x\nname: [a,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run(t, map[string]string{"YUKTA_SERVER": f.URL}, "apply", bad)
	if code != exitFailed || !strings.Contains(errOut, "bad.yml is not a YAML session document: line ") || len(f.requests()) != 1 {
		t.Fatalf("a bad YAML file: exit %d, %d requests\n%s", code, len(f.requests()), errOut)
	}
}

func readAll(r *http.Request) []byte {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return []byte(b.String())
		}
	}
}
