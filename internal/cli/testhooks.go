//go:build fuelsync_testhooks

package cli

// The test hooks of the CLI, in a build with the tag fuelsync_testhooks only
// (make test, whose kill tests run the test binary as fuelsync): a released
// fuelsync reads no FUELSYNC_TEST_* variable and counts nothing
// (notesthooks.go).

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/state"
)

// testHooks says the hooks are built in.
const testHooks = true

// renders counts the loads and renders of configurations (tests check that a
// plan with nothing changed renders nothing); renderedClusters the clusters
// they rendered, appliedClusters those of applied revisions rendered again.
var renders, renderedClusters, appliedClusters atomic.Int64

// countRenders makes op count its loads and renders.
func countRenders(op *operation.Operation) {
	op.OnLoad = func() { renders.Add(1) }
	op.OnRender = func(clusters []string) { renderedClusters.Add(int64(len(clusters))) }
	op.OnRenderApplied = func(clusters []string) { appliedClusters.Add(int64(len(clusters))) }
}

// crashHookFromEnv makes apply kill itself with SIGKILL just before the Nth
// step that changes the work directory (every mkdir, file creation, fsync,
// rename, symlink and removal of tidying and publishing) when
// FUELSYNC_TEST_CRASH_AT=N, or fail that step with ENOSPC when
// FUELSYNC_TEST_FAIL_AT=N: the crash-safety tests do so at each step in turn.
func crashHookFromEnv(stderr io.Writer) {
	crash, _ := strconv.ParseInt(os.Getenv("FUELSYNC_TEST_CRASH_AT"), 10, 64)
	fail, _ := strconv.ParseInt(os.Getenv("FUELSYNC_TEST_FAIL_AT"), 10, 64)
	if crash <= 0 && fail <= 0 {
		return
	}
	var count atomic.Int64
	state.TestHookStep = func(step string) error {
		switch count.Add(1) {
		case crash:
			fmt.Fprintf(stderr, "fuelsync: FUELSYNC_TEST_CRASH_AT=%d: killed before %s\n", crash, step)
			// SIGKILL on Unix (TerminateProcess elsewhere): no deferred
			// function, no cleanup runs.
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Kill()
			}
			select {}
		case fail:
			fmt.Fprintf(stderr, "fuelsync: FUELSYNC_TEST_FAIL_AT=%d: failing %s\n", fail, step)
			return fmt.Errorf("%s: %w", step, syscall.ENOSPC)
		}
		return nil
	}
}

// pauseHookFromEnv makes a shard replica pause between its plan and its
// commit when FUELSYNC_TEST_PAUSE_COMMIT=DIR and the file DIR/arm exists:
// it removes DIR/arm, writes DIR/paused (the clusters it commits), and
// waits until DIR/paused is removed. The tests stop it there until its lease
// expires, and check that its late commit is refused.
func pauseHookFromEnv() {
	dir := os.Getenv("FUELSYNC_TEST_PAUSE_COMMIT")
	if dir == "" {
		return
	}
	controller.TestHookBeforeShardCommit = func(clusters []string) {
		if os.Remove(filepath.Join(dir, "arm")) != nil {
			return
		}
		paused := filepath.Join(dir, "paused")
		if os.WriteFile(paused, []byte(strings.Join(clusters, " ")+"\n"), 0o644) != nil {
			return
		}
		for {
			if _, err := os.Stat(paused); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
