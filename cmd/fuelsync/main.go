// Command fuelsync is a GitOps reconciler for OpenStack-Fuel-style deployment
// configuration kept in git. See README.md for the commands. It does not link
// the etcd client nor the Prometheus client, so that it starts fast: serve,
// and any command with the state on etcd, run in fuelsync-server
// (cmd/fuelsync-server), which fuelsync executes in its place.
package main

import (
	"os"

	"github.com/fuelsync/fuelsync/internal/cli"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var version, commit string

func main() { os.Exit(cli.Main(os.Args, os.Stdout, os.Stderr, version, commit)) }
