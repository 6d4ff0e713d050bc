// Command fuelsync-server is fuelsync with the serve daemon's Prometheus
// metrics and the state backend on etcd (with serve's replicas) linked in: the
// same commands, flags and output. fuelsync runs it in its place for serve and
// for any command with the state on etcd; it can be run directly too.
package main

import (
	"os"

	_ "github.com/fuelsync/fuelsync/etcdstate" // the state on etcd
	"github.com/fuelsync/fuelsync/internal/cli"
	_ "github.com/fuelsync/fuelsync/server/prommetrics" // serve's /metrics
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var version, commit string

func main() { os.Exit(cli.ServerMain(os.Args, os.Stdout, os.Stderr, version, commit)) }
