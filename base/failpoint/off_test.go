//go:build !fuelsync_testhooks

package failpoint

import (
	"errors"
	"testing"
)

// TestReleasedDoesNothing: without the tag fuelsync_testhooks a point stays
// off when enabled (its function never runs, Inject returns nil) and costs
// no allocation, arguments and all.
func TestReleasedDoesNothing(t *testing.T) {
	if Enabled {
		t.Fatal("Enabled without the tag")
	}
	ran := false
	Enable(StateStep, func(...string) error { ran = true; return errors.New("injected") })
	defer Disable(StateStep)
	t.Setenv("FUELSYNC_FAILPOINTS", StateStep+"=fail@1")
	if err := Inject(StateStep, "mkdir set"); err != nil || ran {
		t.Fatalf("Inject of an enabled point: %v, ran %v; want nil, not run", err, ran)
	}
	clusters := []string{"a", "b"}
	if n := testing.AllocsPerRun(100, func() {
		_ = Inject(StateStep, "create "+clusters[0])
		_ = Inject(ShardCommit, clusters...)
	}); n != 0 {
		t.Errorf("Inject allocates %v times a run; want 0", n)
	}
}
