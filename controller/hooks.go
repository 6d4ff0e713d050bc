//go:build fuelsync_testhooks

package controller

// The test hooks of the controller, in a build with the tag
// fuelsync_testhooks only (make test, the shard tests): a released fuelsync
// has no TestHookBeforeShardCommit, and beforeShardCommit is the no-op of
// nohooks.go.

// TestHookBeforeShardCommit, when not nil, is called by a shard replica
// between its plan (the set written) and its commit to etcd, with the
// clusters it commits. Tests pause an owner there, stop it until its lease
// expires, and check that its late commit is refused.
var TestHookBeforeShardCommit func(clusters []string)

func beforeShardCommit(clusters []string) {
	if TestHookBeforeShardCommit != nil {
		TestHookBeforeShardCommit(clusters)
	}
}
