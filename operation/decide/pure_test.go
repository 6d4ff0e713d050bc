package decide

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDecideIsPure: the decisions are data to data. The package's code
// imports nothing that reaches a file, a lock, a clock or the network, and
// of render it names the Model type only (it renders nothing).
func TestDecideIsPure(t *testing.T) {
	banned := []string{"os", "io", "io/fs", "path/filepath", "sync", "time", "context", "net", "net/http", "os/exec", "runtime",
		"github.com/fuelsync/fuelsync/operation", "github.com/fuelsync/fuelsync/runs", "github.com/fuelsync/fuelsync/controller"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, b := range banned {
				if path == b {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "render" && sel.Sel.Name != "Model" {
					t.Errorf("%s: render.%s (decide renders nothing)", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}
