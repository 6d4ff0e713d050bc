//go:build !fuelsync_testhooks

package cli

import "sync/atomic"

// Without the test hooks nothing counts renders (testhooks.go counts them);
// these stay 0 for the tests that read them to compile, and those tests end at
// requireTestHooks.
var renders, renderedClusters, appliedClusters atomic.Int64
