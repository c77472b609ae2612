package build_test

import (
	"runtime/debug"
	"testing"
	"time"

	"github.com/yukta/yukta/domain/build"
)

const rev = "9447398842881290bd071bcdd33020d29cfb6305"

func vcs(modified string) []debug.BuildSetting {
	return []debug.BuildSetting{
		{Key: "-buildmode", Value: "exe"},
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: rev},
		{Key: "vcs.time", Value: "2026-12-01T12:34:56Z"},
		{Key: "vcs.modified", Value: modified},
	}
}

func TestFromBuildInfo(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 34, 56, 0, time.UTC)
	for _, c := range []struct {
		name   string
		bi     *debug.BuildInfo
		linked string
		want   build.Info
	}{{
		name: "go install at a tag",
		bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/yukta/yukta", Version: "v1.2.3"}},
		want: build.Info{Version: "v1.2.3", GoVersion: "go1.26.8", Platform: "linux/amd64"},
	}, {
		name: "a checkout with changes (Go stamps a pseudo-version)",
		bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201123456-9447398842881+dirty"},
			Settings: vcs("true")},
		want: build.Info{Version: "v0.0.0-20261201123456-9447398842881+dirty", Revision: rev, RevisionTime: at, Modified: true,
			GoVersion: "go1.26.8", Platform: "linux/amd64"},
	}, {
		name: "a revision without a module version",
		bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
		want: build.Info{Version: "v0.0.0-20261201123456-944739884288+dirty", Revision: rev, RevisionTime: at, Modified: true,
			GoVersion: "go1.26.8", Platform: "linux/amd64"},
	}, {
		name:   "a version set at link time wins",
		bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
		linked: "v2.0.0",
		want:   build.Info{Version: "v2.0.0", Revision: rev, RevisionTime: at, GoVersion: "go1.26.8", Platform: "linux/amd64"},
	}, {
		name:   "nothing stamped (-buildvcs=false)",
		bi:     &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
		linked: "dev",
		want:   build.Info{Version: "dev", GoVersion: "go1.26.8", Platform: "linux/amd64"},
	}, {
		name: "no build information at all",
		want: build.Info{Version: "dev", Platform: "linux/amd64"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			if got := build.FromBuildInfo(c.bi, c.linked, "linux/amd64"); got != c.want {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestInfoString(t *testing.T) {
	in := build.Info{Version: "v1.2.3", Revision: rev, RevisionTime: time.Date(2026, 12, 1, 12, 34, 56, 0, time.UTC),
		Modified: true, GoVersion: "go1.26.8", Platform: "linux/amd64"}
	if got, want := in.String(), "v1.2.3 (revision "+rev+", 2026-12-01T12:34:56Z, modified) go1.26.8 linux/amd64"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, want := (build.Info{Version: "dev"}).String(), "dev"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
