package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoStartupCompiles: no package of this module that fuelsync links
// compiles a regular expression or parses a template in a package-level
// variable, which every start would pay for (fuelsync version, each Tab of the
// shell completion); they are compiled on first use (sync.OnceValue).
func TestNoStartupCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}|{{.Dir}}|{{join .GoFiles \"|\"}}{{end}}", "./cmd/fuelsync")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) < 3 || !strings.HasPrefix(parts[0], "github.com/fuelsync/fuelsync/") {
			continue
		}
		for _, name := range parts[2:] {
			path := filepath.Join(parts[1], name)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					for _, v := range spec.(*ast.ValueSpec).Values {
						if call := startupCompile(v); call != "" {
							t.Errorf("%s: a package-level variable calls %s at every start; compile it on first use (sync.OnceValue)", fset.Position(v.Pos()), call)
						}
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d files checked", checked)
	}
}

// startupCompile returns the compiling call made when e is evaluated
// (regexp.MustCompile, template.Must...), not counting function literals,
// which run later; "" when there is none.
func startupCompile(e ast.Expr) string {
	found := ""
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok {
					switch pkg.Name + "." + sel.Sel.Name {
					case "regexp.MustCompile", "regexp.Compile", "template.Must":
						found = pkg.Name + "." + sel.Sel.Name
					}
				}
			}
		}
		return found == ""
	})
	return found
}
