package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/state"
)

// renders counts the loads of configurations by the commands run in this
// process (tests check that a plan with nothing changed renders nothing);
// renderedClusters the clusters they rendered, appliedClusters those of
// applied revisions rendered again: the failpoints cli/load, cli/render and
// cli/render-applied. Without the test hooks they stay 0, and the tests that
// read them end at requireTestHooks.
var renders, renderedClusters, appliedClusters atomic.Int64

func init() {
	failpoint.Enable(failpoint.CLILoad, func(...string) error { renders.Add(1); return nil })
	failpoint.Enable(failpoint.CLIRender, func(c ...string) error { renderedClusters.Add(int64(len(c))); return nil })
	failpoint.Enable(failpoint.CLIRenderApplied, func(c ...string) error { appliedClusters.Add(int64(len(c))); return nil })
}

// requireTestHooks ends t (testenv.Unavailable: a skip, a failure in CI) when
// the test binary was built without the test hooks: the tests that kill or
// fail apply at each step (FUELSYNC_FAILPOINTS=state/step=kill@N, fail@N) and
// those that count renders need go test -tags fuelsync_testhooks, as make test
// runs.
func requireTestHooks(t testing.TB) {
	t.Helper()
	if !failpoint.Enabled {
		testenv.Unavailable(t, "this test needs the test hooks: go test -tags fuelsync_testhooks (as make test runs)")
	}
}

// TestReleasedBuildHasNoTestHooks builds fuelsync as make build does (the
// Makefile's tags, without fuelsync_testhooks) and checks that the test hooks
// are not in it: nothing of the failpoint package (Inject inlined away), no
// callbacks of the render failpoints, no FUELSYNC_FAILPOINTS variable name
// in the binary, and an apply with FUELSYNC_FAILPOINTS=state/step=kill@1,fail@1
// is neither killed nor failed: it applies serial 1.
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
	// What only the hooks bring: the failpoint package (its Inject is a
	// no-op the compiler inlines away, its Enable and Disable are not
	// linked), the render failpoints' callbacks.
	for _, sym := range []string{"base/failpoint.", "cli.renderFailpoints.func"} {
		if bytes.Contains(nm, []byte(sym)) {
			t.Errorf("the released binary has the symbol %s", sym)
		}
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(failpoint.EnvVar)) {
		t.Error("the released binary names " + failpoint.EnvVar)
	}

	repo, wd := quickstartRepo(t), filepath.Join(t.TempDir(), "wd")
	apply := exec.Command(bin, "--repo", repo, "--workdir", wd, "apply", "--auto-approve")
	apply.Env = append(os.Environ(), failpoint.EnvVar+"=state/step=kill@1,fail@1")
	out, err := apply.CombinedOutput()
	if err != nil || strings.Contains(string(out), "failpoint") {
		t.Fatalf("apply with %s=state/step=kill@1,fail@1: %v\n%s", failpoint.EnvVar, err, out)
	}
	st, err := state.Open(wd).ReadState()
	if err != nil || st.Serial != 1 {
		t.Fatalf("after the apply: serial %v, %v", st, err)
	}
}
