package health

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestHealthIsPure: the decision reads data alone: its code imports a few
// packages of the standard library that touch no file, clock or network, and
// nothing of fuelsync (the reports store and the applied set stay in package
// reports).
func TestHealthIsPure(t *testing.T) {
	allowed := []string{"cmp", "fmt", "slices", "strings"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); !slices.Contains(allowed, p) {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}
