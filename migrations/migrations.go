// Package migrations embeds the numbered SQL files that build Yukta's schema.
// The server, the tests and the e2e harness apply the same files (with goose),
// so there is one schema history.
package migrations

import "embed"

// FS holds the *.sql migrations at its root.
//
//go:embed *.sql
var FS embed.FS
