// Command yukta is the Yukta server and its command-line client.
// `go run . serve` starts a server with an embedded PostgreSQL. It is the
// public extension API (package server) with nothing added: a custom server
// is the same line with options (docs/extending.md).
package main

import "github.com/yukta/yukta/server"

func main() { server.Main() }
