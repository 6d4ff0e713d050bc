package reconcile_test

// The etcd backend and the Prometheus metrics register themselves with
// reconcile from their inits; linking them here makes the tests of package
// reconcile run with both, as fuelsync-server does (OpenEtcd, /metrics).
import (
	_ "github.com/fuelsync/fuelsync/reconcile/prommetrics"
	_ "github.com/fuelsync/fuelsync/state/etcdstate"
)
