package bootstrap

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/yukta/yukta/domain/build"
)

// Version is the release; builds set it with
// -ldflags "-X github.com/yukta/yukta/bootstrap.Version=v1.2.3". Left at
// "dev", the version comes from the build information (docs/operations.md,
// "Versions").
var Version = build.Dev

// buildInfo is read once: the build information never changes while the
// binary runs.
var buildInfo = sync.OnceValue(func() build.Info {
	bi, _ := debug.ReadBuildInfo()
	return build.FromBuildInfo(bi, Version, runtime.GOOS+"/"+runtime.GOARCH)
})

func buildVersion() string { return buildInfo().Version }

// printVersion writes `yukta version`: one line, the revision in full.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "yukta %s\n", buildInfo())
}

// versionJSON is the JSON of `yukta version -o json`, the same fields as
// GET /api/version.
type versionJSON struct {
	Version      string     `json:"version"`
	Revision     string     `json:"revision,omitempty"`
	RevisionTime *time.Time `json:"revisionTime,omitempty"`
	Modified     bool       `json:"modified"`
	GoVersion    string     `json:"goVersion"`
	Platform     string     `json:"platform"`
}

// printVersionJSON writes the version as one JSON object, for
// `yukta version -o json`.
func printVersionJSON(w io.Writer) error {
	in := buildInfo()
	v := versionJSON{Version: in.Version, Revision: in.Revision, Modified: in.Modified, GoVersion: in.GoVersion, Platform: in.Platform}
	if !in.RevisionTime.IsZero() {
		v.RevisionTime = &in.RevisionTime
	}
	return json.NewEncoder(w).Encode(v)
}
