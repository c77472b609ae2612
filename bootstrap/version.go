package bootstrap

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Version is the release; builds set it with
// -ldflags "-X github.com/yukta/yukta/bootstrap.Version=v1.2.3".
var Version = "dev"

func buildVersion() string {
	v := Version
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
	}
	return v
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "yukta %s %s %s/%s\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
