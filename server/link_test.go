package server_test

// The etcd backend and the Prometheus metrics register themselves with
// packages state and server from their inits; linking them here makes the
// tests of package server run with both, as fuelsync-server does
// (state.OpenEtcd, /metrics).
import (
	_ "github.com/fuelsync/fuelsync/etcdstate"
	_ "github.com/fuelsync/fuelsync/server/prommetrics"
)
