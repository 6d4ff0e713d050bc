package state

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/fuelsync/fuelsync/base/failpoint"
)

// onStep enables the failpoint before each step that changes the disk
// (step): f is given the step's name, and its error is the step's.
func onStep(f func(step string) error) {
	failpoint.Enable(failpoint.StateStep, func(args ...string) error { return f(args[0]) })
}

// offStep disables it.
func offStep() { failpoint.Disable(failpoint.StateStep) }

// onRead enables the failpoint told each content a publish reads (readHook).
func onRead(f func(what string)) {
	failpoint.Enable(failpoint.StateRead, func(args ...string) error { f(args[0]); return nil })
}

// offRead disables it.
func offRead() { failpoint.Disable(failpoint.StateRead) }

// recordPruneReads enables the failpoint state/prune-read to record the
// directories of links a pruning reads (their base names), until the
// function it returns, which returns them, sorted.
func recordPruneReads(t *testing.T) func() []string {
	t.Cleanup(func() { failpoint.Disable(failpoint.StatePruneRead) })
	var mu sync.Mutex
	var read []string
	failpoint.Enable(failpoint.StatePruneRead, func(args ...string) error {
		mu.Lock()
		defer mu.Unlock()
		read = append(read, filepath.Base(args[0]))
		return nil
	})
	return func() []string {
		failpoint.Disable(failpoint.StatePruneRead)
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(read))
	}
}
