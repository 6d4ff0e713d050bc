package controller_test

// The etcd backend registers itself with package state from its init; linking
// it here makes the tests of the controller (the loop and the replicas on a
// state on etcd) run with it, as fuelsync-server does (state.OpenEtcd).
import _ "github.com/fuelsync/fuelsync/etcdstate"
