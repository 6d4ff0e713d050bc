// Command fuelsync is a GitOps reconciler for OpenStack-Fuel-style deployment
// configuration kept in git. See README.md for the commands.
package main

import "os"

func main() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) }
