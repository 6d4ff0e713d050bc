//go:build !fuelsync_testhooks

package etcdstate

import (
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// TestEtcdCrashAroundCommit, in crash_test.go, fails a publish at each step
// around the commit on etcd through the failpoint state/step: it is built
// only with -tags fuelsync_testhooks (make test). Without it: skipped on a
// developer's machine, a failure in CI.
func TestEtcdCrashAroundCommit(t *testing.T) {
	testenv.Unavailable(t, "the crash tests need the test hooks: go test -tags fuelsync_testhooks (as make test runs)")
}
