// Command fuelsync-agent is fuelsync's node agent alone (fuelsync agent):
// a small binary for the nodes, linking none of the loader, render, diff or
// git.
package main

import (
	"os"

	"github.com/fuelsync/fuelsync/agent"
)

// version and commit are set by make build's link flags.
var version, commit string

func main() {
	agent.Version, agent.Commit = version, commit
	os.Exit(agent.Main(os.Args[1:], os.Stdout, os.Stderr))
}
