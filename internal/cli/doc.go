// Package cli is the fuelsync command line: every command's flags, output and
// exit status, over the core packages (server, controller, operation, diff,
// render, loader). Two binaries run it (Main): cmd/fuelsync, the light one,
// and cmd/fuelsync-server, which links the etcd state backend and serve's
// Prometheus metrics besides; fuelsync hands the commands that need them to
// fuelsync-server (dispatch.go).
package cli
