// Package bootstrap is Yukta's composition root: it reads configuration,
// builds the logger, starts the embedded PostgreSQL when no database URL is
// given, wires the adapters and use cases with fx, and runs the commands of
// the yukta binary. It is the only package that imports fx.
package bootstrap

import (
	"context"
	"io"
	"os"

	"github.com/yukta/yukta/adapters/cli"
	"github.com/yukta/yukta/adapters/process"
)

// Main runs the yukta command line and returns the process exit code. The
// client's command tree (adapters/cli) gets the server's commands: serve
// keeps its own flag table (settings in config.go), so its arguments reach
// it unparsed.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return MainWith(ctx, Extensions{}, args, stdout, stderr)
}

// MainWith is Main for a custom server: the same command line, whose serve
// runs the server with ext added (package server is its public face).
func MainWith(ctx context.Context, ext Extensions, args []string, stdout, stderr io.Writer) int {
	// The hidden guard of a process supervisor's program (the server
	// re-executes itself; docs/supervisors.md#the-process-engine): no
	// command tree, no flags, its arguments are the program's.
	if len(args) > 0 && args[0] == process.GuardCommand {
		return process.RunGuard(args[1:])
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		printVersion(stdout)
		return 0
	}
	app := cli.New(ctx, stdout, stderr, os.Getenv)
	app.AddVersion(printVersion, printVersionJSON)
	app.AddCommand("serve [flags]", "run the server (yukta serve -h for flags)", true, func(args []string) int {
		return serve(ctx, ext, args, stdout, stderr)
	})
	return app.Execute(args)
}
