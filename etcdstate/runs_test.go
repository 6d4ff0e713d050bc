package etcdstate

import (
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/runs/storetest"
	"github.com/fuelsync/fuelsync/state"
)

// TestEtcdRuns: the runs on etcd keep the store's contract; every store
// opened is a new client on the same prefix (another replica).
func TestEtcdRuns(t *testing.T) {
	c := etcdtest.Start(t, 1)
	storetest.Run(t, func() runs.Store {
		return runs.Open(etcdWorkdir(t, c, "/fs", state.DefaultLockTTL, 5*time.Second))
	})
}
