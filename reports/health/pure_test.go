package health

import (
	"go/build"
	"slices"
	"testing"
)

// TestHealthIsPure: the decision reads data alone: its code imports a few
// packages of the standard library that touch no file, clock or network, and
// nothing of fuelsync (the reports store and the applied set stay in package
// reports).
func TestHealthIsPure(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkg.Imports {
		if !slices.Contains([]string{"cmp", "fmt", "slices", "strings"}, p) {
			t.Errorf("package health imports %s", p)
		}
	}
}
