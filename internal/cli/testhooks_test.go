package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/state"
)

// requireTestHooks ends t (testenv.Unavailable: a skip, a failure in CI) when
// the test binary was built without the test hooks: the tests that kill or
// fail apply at each step (FUELSYNC_TEST_CRASH_AT, FUELSYNC_TEST_FAIL_AT) and
// those that count renders need go test -tags fuelsync_testhooks, as make test
// runs.
func requireTestHooks(t testing.TB) {
	t.Helper()
	if !testHooks {
		testenv.Unavailable(t, "this test needs the test hooks: go test -tags fuelsync_testhooks (as make test runs)")
	}
}

// TestReleasedBuildHasNoTestHooks builds fuelsync as make build does (the
// Makefile's tags, without fuelsync_testhooks) and checks that the test hooks
// are not in it: no TestHookStep, no render counters, no crash hook, no
// FUELSYNC_TEST_ variable name in the binary, and an apply with FUELSYNC_TEST_CRASH_AT=1 and
// FUELSYNC_TEST_FAIL_AT=1 is neither killed nor failed: it applies serial 1.
func TestReleasedBuildHasNoTestHooks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fuelsync")
	}
	gobin := testenv.Tool(t, "go", "the Go toolchain")
	bin := filepath.Join(t.TempDir(), "fuelsync")
	build := exec.Command(gobin, "build", "-tags", buildTags, "-o", bin, "../../cmd/fuelsync")
	build.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0") // no -tags from the environment; static, as make build
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	nm, err := exec.Command(gobin, "tool", "nm", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, nm)
	}
	// What only the hooks bring: the hook variable, the counters, and the
	// crash hook's closure (crashHookFromEnv itself stays, as a no-op).
	for _, sym := range []string{"state.TestHookStep", "cli.renders", "cli.renderedClusters", "cli.appliedClusters", "cli.crashHookFromEnv.func", "controller.TestHookBeforeShardCommit", "cli.profileHookFromEnv.func"} {
		if bytes.Contains(nm, []byte(sym)) {
			t.Errorf("the released binary has the symbol %s", sym)
		}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("FUELSYNC_TEST_")) {
		t.Error("the released binary names a FUELSYNC_TEST_ variable")
	}

	repo, wd := quickstartRepo(t), filepath.Join(t.TempDir(), "wd")
	apply := exec.Command(bin, "--repo", repo, "--workdir", wd, "apply", "--auto-approve")
	apply.Env = append(os.Environ(), "FUELSYNC_TEST_CRASH_AT=1", "FUELSYNC_TEST_FAIL_AT=1")
	out, err := apply.CombinedOutput()
	if err != nil || strings.Contains(string(out), "FUELSYNC_TEST_") {
		t.Fatalf("apply with FUELSYNC_TEST_CRASH_AT=1 FUELSYNC_TEST_FAIL_AT=1: %v\n%s", err, out)
	}
	st, err := state.Open(wd).ReadState()
	if err != nil || st.Serial != 1 {
		t.Fatalf("after the apply: serial %v, %v", st, err)
	}
}
