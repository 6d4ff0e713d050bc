package cli

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layers are the packages of the module, from the top of the house down:
// each imports only packages of the layers below it (docs/design.md). The
// pipeline runs internal/cli → server → controller → operation →
// operation/decide → {runs, reports} → reports/health → {source, state} →
// diff → render → loader; beside it, on the floor of what it uses: the agent and its
// executors, the etcd backend (above the stores it keeps), notify,
// scaffold, specedit, capabilities, expr, and at the bottom the API's wire
// types and the small text helpers every floor uses.
var layers = [][]string{
	{"cmd/fuelsync", "cmd/fuelsync-server", "cmd/fuelsync-agent"},
	{"internal/cli", "server/prommetrics"},
	{"server", "agent"},
	{"controller", "server/taskgraph", "agent/executor"},
	{"operation"},
	{"operation/decide", "etcdstate", "runs/storetest"},
	{"runs", "reports"},
	{"reports/health"},
	{"source", "state", "scaffold", "notify"},
	{"diff", "specedit"},
	{"render"},
	{"render/components", "render/selector", "capabilities"},
	{"loader", "expr"},
	{"api", "base/names", "base/redact", "base/safetext", "base/failpoint"},
}

// tools are the packages of tests and builds (generators, fixtures, the
// test report, the image and release builders, the tests of the shipped
// units and examples): no package of the house imports one.
var tools = []string{"deploy", "examples", "internal/benchutil", "internal/etcdtest", "internal/gittest", "internal/golden", "internal/image",
	"internal/mapfs", "internal/release", "internal/release/pack", "internal/repogen", "internal/testenv", "internal/testreport"}

// TestPackagesPointOneWay: every package of the module is on a floor of
// layers or among the tools, and imports nothing on its own floor or above
// it, nor a tool (go list -deps of each: its own code, tests aside).
func TestPackagesPointOneWay(t *testing.T) {
	t.Parallel() // go list, in a process of its own
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/fuelsync/fuelsync/"
	placed := slices.Concat(append(layers, tools)...)
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(goList(t, "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...")), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		deps[pkg] = f[1:]
		if !slices.Contains(placed, pkg) {
			t.Errorf("package %s is on no floor of layers (nor among the tools): place it", pkg)
		}
	}
	for _, pkg := range placed {
		if _, ok := deps[pkg]; !ok {
			t.Errorf("layers or tools name %s, which go list does not know", pkg)
		}
	}
	for i, layer := range layers {
		banned := slices.Concat(append(slices.Clone(layers[:i+1]), tools)...)
		for _, pkg := range layer {
			for _, a := range banned {
				if a != pkg && slices.Contains(deps[pkg], mod+a) {
					t.Errorf("%s imports %s, which is not below it", pkg, a)
				}
			}
		}
	}
}

// goList runs go list with args at the module's root, and returns its
// output.
func goList(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// goListDeps lists the packages pkg (a path from the module's root) depends
// on, itself included: go list -deps.
func goListDeps(t testing.TB, pkg string) []string {
	t.Helper()
	return strings.Fields(goList(t, "-deps", pkg))
}

// TestAgentLinksLittle: the agent binary links the API package and its
// executors, none of the loader, render, diff, state or git.
func TestAgentLinksLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	deps := goListDeps(t, "./cmd/fuelsync-agent")
	for _, d := range deps {
		for _, banned := range []string{"/loader", "/render", "/diff", "/state", "/reports", "/runs", "go-git", "hcl/v2", "yaml"} {
			if strings.Contains(d, banned) {
				t.Errorf("fuelsync-agent links %s", d)
			}
		}
	}
	if !slices.Contains(deps, "github.com/fuelsync/fuelsync/api") || !slices.Contains(deps, "github.com/fuelsync/fuelsync/agent/executor") {
		t.Errorf("fuelsync-agent does not link the API package and the executors: %v", deps)
	}
}
