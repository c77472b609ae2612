package server_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/yukta/yukta/server"
)

type sink struct{}

func (sink) Audit(context.Context, []server.AuditRecord) error { return nil }

func run(t *testing.T, args []string, opts ...server.Option) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := server.Run(t.Context(), args, &stdout, &stderr, opts...)
	return code, stdout.String(), stderr.String()
}

// TestOptionsRefusedBeforeAnythingRuns: an adapter given twice, or nil,
// stops the program with exit code 2 and a line naming the option.
func TestOptionsRefusedBeforeAnythingRuns(t *testing.T) {
	secrets := server.SecretFunc(func(string) string { return "" })
	for want, opts := range map[string][]server.Option{
		"yukta: WithSecretProvider is given twice":       {server.WithSecretProvider(secrets), server.WithSecretProvider(secrets)},
		"yukta: WithAuditSink is given twice":            {server.WithAuditSink(sink{}), server.WithAuditSink(sink{})},
		"yukta: WithAuditSink: the sink is nil":          {server.WithAuditSink(nil)},
		"yukta: WithSecretProvider: the provider is nil": {server.WithSecretProvider(nil)},
	} {
		code, _, stderr := run(t, []string{"--version"}, opts...)
		if code != 2 || !strings.HasPrefix(stderr, want) {
			t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, want)
		}
	}
}

// TestRunIsTheYuktaCommandLine: with options that are fine, Run is the
// yukta binary's command line.
func TestRunIsTheYuktaCommandLine(t *testing.T) {
	shout := server.Descriptor{Type: "SHOUT", Category: server.Processor, Description: "shouts"}
	code, stdout, stderr := run(t, []string{"--version"}, server.WithNodeType(shout, server.RunnerFunc(
		func(context.Context, server.Invocation) (server.Outcome, error) { return server.Outcome{}, nil })), server.WithAuditSink(sink{}))
	if code != 0 || !strings.HasPrefix(stdout, "yukta ") || stderr != "" {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
