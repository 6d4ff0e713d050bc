package controller

import "github.com/fuelsync/fuelsync/base/failpoint"

// beforeShardCommit is the failpoint between a shard replica's plan (the set
// written) and its commit to etcd, with the clusters it commits: tests pause
// an owner there, stop it until its lease expires, and check that its late
// commit is refused. Without the tag fuelsync_testhooks, as released, it is
// inlined away.
func beforeShardCommit(clusters []string) { _ = failpoint.Inject(failpoint.ShardCommit, clusters...) }
