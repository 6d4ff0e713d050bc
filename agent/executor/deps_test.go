package executor

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: the package imports the standard library alone
// (nothing of fuelsync, no module), so that the agent that links it stays
// free of the loader, render, diff and go-git. go list -deps, tests aside.
func TestStandardLibraryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/fuelsync/fuelsync/agent/executor" {
		t.Errorf("non-standard packages in the dependencies: %q", got)
	}
}
