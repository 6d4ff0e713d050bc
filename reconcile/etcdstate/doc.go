// Package etcdstate is the state backend on etcd (etcd://host:2379/prefix):
// the state document, the writers' lock, and what serve's replicas share (a
// leader election, the committed serial, reconcile requests). It is built on
// etcd's official client, which brings gRPC and protobuf with it; so only the
// fuelsync-server binary links it, and registers it with reconcile from this
// package's init:
//
//	import _ "github.com/fuelsync/fuelsync/reconcile/etcdstate"
//
// after which reconcile.OpenEtcd opens it. The core (reconcile) knows the
// backend only through its interfaces, reconcile.Backend and
// reconcile.Coordinator.
package etcdstate

import "github.com/fuelsync/fuelsync/reconcile"

func init() {
	reconcile.RegisterBackend("etcd", func(cfg reconcile.EtcdConfig) (reconcile.Backend, error) {
		e, err := Open(cfg)
		if err != nil {
			return nil, err
		}
		return e, nil
	})
}

// Etcd is a Coordinator: serve's replicas run on it.
var _ reconcile.Coordinator = (*Etcd)(nil)
