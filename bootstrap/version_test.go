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
