package bootstrap

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestVersionTextAndJSON: `yukta version` and its JSON form say the same
// as the build information the doors use. A test binary has no VCS
// stamping, so its version is dev.
func TestVersionTextAndJSON(t *testing.T) {
	in := buildInfo()
	var text bytes.Buffer
	printVersion(&text)
	if got, want := text.String(), "yukta "+in.String()+"\n"; got != want {
		t.Fatalf("printVersion: %q, want %q", got, want)
	}
	if in.Version != "dev" || in.GoVersion != runtime.Version() || in.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("build info of a test binary: %+v", in)
	}
	var js bytes.Buffer
	if err := printVersionJSON(&js); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(js.Bytes(), &v); err != nil || !strings.HasSuffix(js.String(), "}\n") {
		t.Fatalf("printVersionJSON: %v: %q", err, js.String())
	}
	if v["version"] != "dev" || v["goVersion"] != runtime.Version() || v["platform"] != in.Platform || v["modified"] != false {
		t.Fatalf("printVersionJSON: %s", js.String())
	}
	if _, ok := v["revision"]; ok {
		t.Fatalf("printVersionJSON names a revision the binary does not know: %s", js.String())
	}
}

// TestVersionCommandOutputs: `yukta version -o json|jsonl` print what
// printVersionJSON prints, and a format it does not know is a usage error.
func TestVersionCommandOutputs(t *testing.T) {
	var want bytes.Buffer
	if err := printVersionJSON(&want); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"json", "jsonl"} {
		var out, errOut bytes.Buffer
		if code := Main(t.Context(), []string{"version", "-o", o}, &out, &errOut); code != 0 {
			t.Fatalf("version -o %s: exit %d: %s", o, code, errOut.String())
		}
		var got map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("version -o %s: %v: %q", o, err, out.String())
		}
		if gb, _ := json.Marshal(got); string(gb) != strings.TrimSpace(mustCompact(t, want.Bytes())) {
			t.Fatalf("version -o %s: %s, want %s", o, gb, want.String())
		}
		if o == "jsonl" && strings.Count(out.String(), "\n") != 1 {
			t.Fatalf("version -o jsonl: %q, want one line", out.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := Main(t.Context(), []string{"version", "-o", "yaml"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `-o "yaml"`) {
		t.Fatalf("version -o yaml: exit %d, stderr %q; want 2 naming the value", code, errOut.String())
	}
}

func mustCompact(t *testing.T, b []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
