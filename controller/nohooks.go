//go:build !fuelsync_testhooks

package controller

// beforeShardCommit is where a build with the tag fuelsync_testhooks calls
// its test hook (hooks.go) before a shard's commit; without the tag, as
// released, it does nothing.
func beforeShardCommit([]string) {}
