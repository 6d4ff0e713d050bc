//go:build !fuelsync_testhooks

package cli

import (
	"io"

	"github.com/fuelsync/fuelsync/operation"
)

// testHooks says the test hooks are not built in (a build without the tag
// fuelsync_testhooks, as released): see testhooks.go.
const testHooks = false

// countRenders counts nothing without the test hooks.
func countRenders(*operation.Operation) {}

// crashHookFromEnv reads no FUELSYNC_TEST_* variable without the test hooks:
// a released apply is never killed nor failed on purpose.
func crashHookFromEnv(io.Writer) {}

// pauseHookFromEnv reads no FUELSYNC_TEST_* variable without the test hooks:
// a released shard never pauses before its commit.
func pauseHookFromEnv() {}

// profileHookFromEnv reads no FUELSYNC_TEST_* variable without the test
// hooks.
func profileHookFromEnv() {}
