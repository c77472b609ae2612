package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// App is the yukta command tree: the client commands, to which the binary
// adds its own (serve, version). Cobra parses flags anywhere among the
// arguments, prints help, and generates shell completion.
type App struct {
	Root   *cobra.Command
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	server string // --server
}

// exitError carries a command's exit code out of cobra.
type exitError struct{ code int }

func (x exitError) Error() string { return fmt.Sprintf("exit %d", x.code) }

// Exit turns an exit code into what a cobra RunE returns: nil for 0.
func Exit(code int) error {
	if code == exitOK {
		return nil
	}
	return exitError{code}
}

// Footer is the part of `yukta help` after the command list.
var footer = fmt.Sprintf(`Client commands take --server URL (or YUKTA_SERVER; default %s) and send
YUKTA_API_KEY, when set, as a bearer token. Read commands take -o table|json|jsonl.
yukta COMMAND -h shows a command's flags; yukta completion bash|zsh|fish prints a
completion script. Exit codes: 0 ok, 1 refused or failed, 2 usage error, 3 journal
UNANCHORED, 4 run ended FAILURE, 5 run ended STOPPED, 6 server unreachable, 130 interrupted.
`, DefaultServer)

// rootHelp lists every command down to the leaves with its arguments, so
// that `yukta help` is a reference on one screen.
const rootHelp = `{{.Long}}

Usage:
  yukta help [COMMAND]
      this list, or one command's help
{{- range leaves .}}
  {{.UseLine}}
      {{indent .Short}}
{{- end}}

` + "{{footer}}"

// New builds the client command tree. getenv reads YUKTA_SERVER and
// YUKTA_API_KEY (nil: none set).
func New(ctx context.Context, stdout, stderr io.Writer, getenv func(string) string) *App {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	a := &App{ctx: ctx, stdout: stdout, stderr: stderr, getenv: getenv}
	root := &cobra.Command{
		Use:   "yukta",
		Short: "workflow orchestration that people, programs and AI agents steer together",
		Long:  "yukta: workflow orchestration that people, programs and AI agents steer together.",
		// Cobra's own messages are replaced by Execute's, which name the
		// command and the help to read.
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(a.stderr)
			_ = cmd.Help()
			return Exit(exitUsage)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetHelpTemplate(rootHelp)
	root.PersistentFlags().StringVar(&a.server, "server", "", "Yukta server URL (default $YUKTA_SERVER or "+DefaultServer+")")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	// Subcommands keep cobra's default help; only the root lists the tree.
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root {
			defaultHelp(cmd, args)
			return
		}
		cmd.SetHelpTemplate(subHelp)
		defaultHelp(cmd, args)
	})
	a.Root = root
	root.AddCommand(
		a.applyCmd(), a.runCmd(), a.statusCmd(), a.logsCmd(), a.controlCmd(), a.stopAllCmd(), a.pauseWorkflowCmd(), a.resumeWorkflowCmd(),
		a.inputsCmd(), a.answerCmd(), a.sessionsCmd(), a.workflowsCmd(), a.runsCmd(), a.pluginsCmd(),
		a.supervisorsCmd(), a.holdsCmd(), a.approvalsCmd(), a.journalCmd(), a.keysCmd(),
	)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Use = "completion bash|zsh|fish|powershell"
			c.Short = "print a shell completion script: source <(yukta completion bash)"
		}
	}
	return a
}

func init() {
	// Commands are listed in the order they are added, most used first.
	cobra.EnableCommandSorting = false
	// Template functions are global in cobra: registered once, here.
	cobra.AddTemplateFunc("leaves", leaves)
	cobra.AddTemplateFunc("indent", func(s string) string { return strings.ReplaceAll(s, "\n", "\n      ") })
	cobra.AddTemplateFunc("footer", func() string { return footer })
}

// subHelp is cobra's help template for one command.
const subHelp = `{{with (or .Long .Short)}}{{. | trimTrailingWhitespaces}}

{{end}}{{if or .Runnable .HasSubCommands}}{{.UsageString}}{{end}}`

// leaves lists the runnable commands under c, depth first, in the order
// they were added; groups show their subcommands instead of themselves.
func leaves(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() {
			continue
		}
		if sub.HasAvailableSubCommands() && sub.Name() != "completion" {
			out = append(out, leaves(sub)...)
			continue
		}
		out = append(out, sub)
	}
	return out
}

// Execute runs the command line args (without the program name) and
// returns the exit code.
func (a *App) Execute(args []string) int {
	a.Root.SetArgs(args)
	cmd, err := a.Root.ExecuteContextC(a.ctx)
	if err == nil {
		return exitOK
	}
	if x, ok := errors.AsType[exitError](err); ok {
		return x.code
	}
	// Cobra's errors: an unknown command or flag, a flag's bad value, the
	// wrong number of arguments. Nothing was sent.
	if cmd == nil {
		cmd = a.Root
	}
	fmt.Fprintf(a.stderr, "%s: %v\n", cmd.CommandPath(), err)
	usageHint(a.stderr, cmd)
	return exitUsage
}

// usageHint writes the command's usage line and where its help is.
func usageHint(w io.Writer, cmd *cobra.Command) {
	if cmd == nil {
		return
	}
	if cmd.Runnable() && cmd.HasParent() && !cmd.HasSubCommands() {
		fmt.Fprintf(w, "Usage: %s\n", cmd.UseLine())
	}
	help := cmd.CommandPath() + " -h"
	if !cmd.HasParent() {
		help = "yukta help"
	}
	fmt.Fprintf(w, "Run '%s' for help.\n", help)
}

// AddCommand adds a command the binary runs itself (serve, version). With
// raw, its arguments reach fn unparsed, -h included, so it keeps its own
// flags and help.
func (a *App) AddCommand(use, short string, raw bool, fn func(args []string) int) {
	c := &cobra.Command{Use: use, Short: short, DisableFlagParsing: raw,
		RunE: func(_ *cobra.Command, args []string) error { return Exit(fn(args)) }}
	if !raw {
		c.Args = argsBetween(0, 0)
	}
	a.addFirst(c)
}

// addFirst adds one of the binary's own commands before the client
// commands, so that yukta help lists the server first.
func (a *App) addFirst(c *cobra.Command) {
	cmds := a.Root.Commands()
	for _, x := range cmds {
		a.Root.RemoveCommand(x)
	}
	a.Root.AddCommand(c)
	a.Root.AddCommand(cmds...)
}

// AddVersion adds `yukta version [-o table|json|jsonl]`: text prints the
// line, json the same fields as GET /api/version (one line, so jsonl is the
// same).
func (a *App) AddVersion(text func(io.Writer), json func(io.Writer) error) {
	c := &cobra.Command{Use: "version", Short: "print the version, its revision and the Go toolchain", Args: argsBetween(0, 0)}
	addOutput(c)
	a.local(c, func(e *env, _ []string) int {
		if !e.machine() {
			text(e.stdout)
			return exitOK
		}
		var b bytes.Buffer
		if err := json(&b); err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
			return exitFailed
		}
		if e.output == outJSONL {
			return e.emitLine(b.Bytes())
		}
		return e.emit(b.Bytes(), "")
	})
	a.addFirst(c)
}

// env returns what a command runs with.
func (a *App) env(cmd *cobra.Command) *env {
	return &env{ctx: cmd.Context(), name: cmd.CommandPath(), cmd: cmd, stdout: a.stdout, stderr: a.stderr, getenv: a.getenv, server: a.server}
}

// leaf makes c run fn with a connected client; an -o flag, when c has one,
// is checked first.
func (a *App) leaf(c *cobra.Command, fn func(e *env, args []string) int) *cobra.Command {
	return a.local(c, func(e *env, args []string) int {
		if err := e.connect(); err != nil {
			fmt.Fprintf(e.stderr, "%s: %v\n", e.name, err)
			return exitUsage
		}
		return fn(e, args)
	})
}

// local makes c run fn without a server connection (journal verify).
func (a *App) local(c *cobra.Command, fn func(e *env, args []string) int) *cobra.Command {
	c.RunE = func(cmd *cobra.Command, args []string) error {
		e := a.env(cmd)
		if f := cmd.Flags().Lookup("output"); f != nil {
			e.output = f.Value.String()
			if !validOutput(e.output) {
				return Exit(e.usageError("-o %q: want table, json or jsonl", e.output))
			}
		}
		return Exit(fn(e, args))
	}
	return c
}

// group is a command that only holds subcommands: bare, or with an
// unknown subcommand, it is a usage error that lists them.
func (a *App) group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs}
	c.AddCommand(subs...)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		var names []string
		for _, s := range cmd.Commands() {
			names = append(names, s.Name())
		}
		list := strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
		e := a.env(cmd)
		if len(args) == 0 {
			return Exit(e.usageError("missing the %s command; use %s", cmd.Name(), list))
		}
		return Exit(e.usageError("unknown %s command %q; use %s", cmd.Name(), args[0], list))
	}
	return c
}

// argsBetween checks the number of positional arguments; max < 0: no limit.
func argsBetween(minN, maxN int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < minN {
			return fmt.Errorf("missing arguments: want %s", argNames(cmd))
		}
		if maxN >= 0 && len(args) > maxN {
			return fmt.Errorf("too many arguments: %q is more than %s takes", args[maxN], argNames(cmd))
		}
		return nil
	}
}

// argNames is the positional part of a command's Use line.
func argNames(cmd *cobra.Command) string {
	_, rest, _ := strings.Cut(cmd.Use, " ")
	var names []string
	for f := range strings.FieldsSeq(rest) {
		if strings.HasPrefix(f, "[-") || strings.HasPrefix(f, "-") {
			break
		}
		names = append(names, f)
	}
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, " ")
}
