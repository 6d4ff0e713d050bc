package cli

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackagesPointOneWay: the packages of the pipeline import one way down
// it, internal/cli → server → controller → operation → operation/decide →
// {runs, reports} → {source, state} → diff → render → loader
// (docs/design.md): none of them reaches a package above it, source and
// state do not reach each other, and nothing reaches internal/cli. notify
// (serve's notifications, which server imports) reads its configuration
// through loader alone, beside diff. go list -deps of each (its own code,
// tests aside).
func TestPackagesPointOneWay(t *testing.T) {
	t.Parallel() // go list, in a process of its own
	if testing.Short() {
		t.Skip("runs go list")
	}
	const mod = "github.com/fuelsync/fuelsync/"
	layers := [][]string{{"internal/cli"}, {"server", "agent"}, {"controller"}, {"operation"}, {"operation/decide"}, {"runs", "reports"}, {"source", "state"}, {"diff", "notify"}, {"render"}, {"loader"}, {"api", "internal/names", "internal/failpoint"}}
	for i, layer := range layers {
		for _, pkg := range layer {
			deps := goListDeps(t, "./"+pkg)
			var above []string
			for _, l := range layers[:i] {
				above = append(above, l...)
			}
			for _, other := range layer {
				if other != pkg {
					above = append(above, other)
				}
			}
			for _, a := range above {
				if slices.Contains(deps, mod+a) {
					t.Errorf("%s imports %s, which is not below it", pkg, a)
				}
			}
		}
	}
}

// goListDeps lists the packages pkg (a path from the module's root) depends
// on, itself included: go list -deps.
func goListDeps(t testing.TB, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
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
