package runs_test

import (
	"testing"

	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/runs/storetest"
)

// TestWorkdirStore: the work directory's store keeps its contract.
func TestWorkdirStore(t *testing.T) {
	dir := runs.ClaimedDir(t)
	storetest.Run(t, func() runs.Store { return &runs.Workdir{Dir: dir} })
}
