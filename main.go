// Command yukta is the Yukta server and its command-line client.
// `go run . serve` starts a server with an embedded PostgreSQL.
package main

import (
	"context"
	"os"

	"github.com/yukta/yukta/bootstrap"
)

func main() {
	os.Exit(bootstrap.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
