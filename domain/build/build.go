// Package build describes the binary that runs: its version, the source
// revision it was built from, and the toolchain and platform. The doors show
// it (yukta version, GET /api/version, the MCP serverInfo, the
// yukta_build_info metric); bootstrap reads it once at start-up.
package build

import (
	"runtime/debug"
	"time"
)

// Dev is the version of a binary that says nothing about its source: built
// outside a module-aware checkout, or with VCS stamping off
// (-buildvcs=false).
const Dev = "dev"

// Info is what a binary knows about its own build.
type Info struct {
	// Version is the release (v1.2.3) when one was set at link time or the
	// binary was installed with go install …@v1.2.3; the Go pseudo-version
	// (v0.0.0-20261201123456-9447398abcde, "+dirty" when the tree had
	// changes) when built from a checkout; else Dev.
	Version string
	// Revision is the VCS commit the binary was built from, in full; empty
	// when unknown.
	Revision string
	// RevisionTime is that commit's time; zero when unknown.
	RevisionTime time.Time
	// Modified reports that the working tree had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain, such as go1.26.8.
	GoVersion string
	// Platform is GOOS/GOARCH, such as linux/amd64.
	Platform string
}

// FromBuildInfo reads an Info from the build information the Go linker
// embeds (runtime/debug.ReadBuildInfo; nil when there is none). linked is
// the version set with -ldflags -X, or "" or Dev when none was; it wins over
// the module version. platform is GOOS/GOARCH of the running binary.
func FromBuildInfo(bi *debug.BuildInfo, linked, platform string) Info {
	in := Info{Version: Dev, Platform: platform}
	if bi == nil {
		if linked != "" {
			in.Version = linked
		}
		return in
	}
	in.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				in.RevisionTime = t.UTC()
			}
		case "vcs.modified":
			in.Modified = s.Value == "true"
		case "GOOS", "GOARCH":
			// The running platform is passed in: the settings only say
			// what was asked of the compiler.
		}
	}
	switch {
	case linked != "" && linked != Dev:
		in.Version = linked
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		// go install …@v1.2.3, or a build from a checkout (Go 1.24 and
		// later stamp a pseudo-version from the VCS).
		in.Version = bi.Main.Version
	case in.Revision != "":
		// An older toolchain stamped the revision but no version.
		in.Version = pseudo(in)
	}
	return in
}

// pseudo is a version in the shape of a Go pseudo-version, for a revision
// without one.
func pseudo(in Info) string {
	v := "v0.0.0-"
	if !in.RevisionTime.IsZero() {
		v += in.RevisionTime.Format("20060102150405") + "-"
	}
	v += Short(in.Revision)
	if in.Modified {
		v += "+dirty"
	}
	return v
}

// Short is the first 12 characters of a revision, as git and the Go
// pseudo-versions abbreviate it.
func Short(revision string) string {
	if len(revision) > 12 {
		return revision[:12]
	}
	return revision
}

// String is one line for people: "v1.2.3 (revision 9447398842881290bd07…,
// 2026-12-01T12:34:56Z, modified) go1.26.8 linux/amd64", leaving out what is
// unknown. The revision is in full, so a script can check it out.
func (in Info) String() string {
	s := in.Version
	if in.Revision != "" {
		s += " (revision " + in.Revision
		if !in.RevisionTime.IsZero() {
			s += ", " + in.RevisionTime.Format(time.RFC3339)
		}
		if in.Modified {
			s += ", modified"
		}
		s += ")"
	}
	if in.GoVersion != "" {
		s += " " + in.GoVersion
	}
	if in.Platform != "" {
		s += " " + in.Platform
	}
	return s
}
