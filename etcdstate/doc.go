// Package etcdstate is the state backend on etcd (etcd://host:2379/prefix):
// the state document, the writers' lock, and what serve's replicas share (a
// leader election, the committed serial, reconcile requests). It is built on
// etcd's official client, which brings gRPC and protobuf with it; so only the
// fuelsync-server binary links it, and registers it with package state from
// this package's init:
//
//	import _ "github.com/fuelsync/fuelsync/etcdstate"
//
// after which state.OpenEtcd opens it. The rest of fuelsync knows the backend
// only through its interfaces, state.Backend and state.Coordinator.
package etcdstate

import (
	"github.com/fuelsync/fuelsync/state"
)

func init() {
	state.RegisterBackend("etcd", func(cfg state.EtcdConfig) (state.Backend, error) {
		e, err := Open(cfg)
		if err != nil {
			return nil, err
		}
		return e, nil
	})
}

// Etcd is a Coordinator: serve's replicas run on it.
var _ state.Coordinator = (*Etcd)(nil)
