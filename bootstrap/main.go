// Package bootstrap is Yukta's composition root: it reads configuration,
// builds the logger, starts the embedded PostgreSQL when no database URL is
// given, wires the adapters and use cases with fx, and runs the commands of
// the yukta binary. It is the only package that imports fx.
package bootstrap

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/yukta/yukta/adapters/cli"
)

const usage = `yukta: workflow orchestration that people, programs and AI agents steer together.

Usage:
  yukta serve [flags]   run the server (yukta serve -h for flags)
  yukta version         print the version
  yukta help            show this help

Client commands (talk to a running server):
`

// Main runs the yukta command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage+cli.Usage())
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-v":
		printVersion(stdout)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage+cli.Usage())
		return 0
	case "apply", "run", "status", "logs", "control", "stop-all", "inputs", "answer", "journal", "supervisors", "approvals":
		return cli.Run(ctx, args[0], args[1:], stdout, stderr, os.Getenv)
	default:
		fmt.Fprintf(stderr, "yukta: unknown command %q\n\n%s", args[0], usage+cli.Usage())
		return 2
	}
}
