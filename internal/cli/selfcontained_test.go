package cli

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// foreignRef matches a reference to a document a user of fuelsync does not have:
// the design contract the project was built to (cited by its file name in
// capitals) and the data directory that sat beside the development checkout. The
// pattern is assembled from parts so that this file passes its own check.
var foreignRef = regexp.MustCompile(`\b` + "SP" + `EC\b|\.\./` + "sha" + `red\b|` + "sha" + `red/corpus`)

// findForeign returns the lines of text matching foreignRef.
func findForeign(text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		if foreignRef.MatchString(line) {
			out = append(out, fmt.Sprintf("line %d: %s", i+1, strings.TrimSpace(line)))
		}
	}
	return out
}

// TestNoForeignReferences: nothing in the project cites a document the user does
// not have (the design contract) or a directory outside the project: every --help
// page of the built CLI, every generated file (plugin create output in each form,
// rendered artifacts of every example), and every file of the repository — docs,
// examples, test data, Makefile, CI script, Go code with its comments and tests.
func TestNoForeignReferences(t *testing.T) {
	t.Parallel() // reads files and runs the help pages as processes
	check := func(t *testing.T, what, text string) {
		t.Helper()
		for _, l := range findForeign(text) {
			t.Errorf("%s: %s", what, l)
		}
	}

	t.Run("help", func(t *testing.T) {
		// The test binary is the CLI with FUELSYNC_RUN_MAIN=1 (TestMain).
		var paths [][]string
		var walk func(prefix []string, cmds []*cli.Command)
		walk = func(prefix []string, cmds []*cli.Command) {
			for _, c := range cmds {
				if c.Hidden {
					continue // __complete, the completion scripts' helper
				}
				p := append(append([]string(nil), prefix...), c.Name)
				paths = append(paths, p)
				walk(p, c.Subcommands)
			}
		}
		walk(nil, newApp(io.Discard, io.Discard).Commands)
		paths = append(paths, nil) // fuelsync --help
		if len(paths) < 25 {
			t.Fatalf("only %d commands found", len(paths))
		}
		for _, p := range paths {
			args := append(append([]string(nil), p...), "--help")
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "FUELSYNC_RUN_MAIN=1", "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("fuelsync %s: %v\n%s", strings.Join(args, " "), err, out)
				continue
			}
			if !bytes.Contains(out, []byte("USAGE")) {
				t.Errorf("fuelsync %s printed no help:\n%s", strings.Join(args, " "), out)
			}
			check(t, "fuelsync "+strings.Join(args, " "), string(out))
		}
	})

	t.Run("generated", func(t *testing.T) {
		dir := t.TempDir()
		examples := filepath.Join("..", "..", "examples")
		var runs [][]string
		for _, v := range []string{"4.0.0", "5.0.0", "6.0.0"} {
			for _, format := range []string{"yaml", "hcl"} {
				name := fmt.Sprintf("p%s-%s", strings.ReplaceAll(v, ".", ""), format)
				runs = append(runs, []string{"--repo", filepath.Join(examples, "quickstart"), "plugin", "create", name,
					"--package-version", v, "--format", format, "--component", "network:neutron:ml2:" + name, "--dir", filepath.Join(dir, "plugins", name)})
				if v != "4.0.0" {
					runs = append(runs, []string{"--repo", filepath.Join(examples, "quickstart"), "plugin", "create", name + "-release",
						"--package-version", v, "--format", format, "--release", "--dir", filepath.Join(dir, "plugins", name+"-release")})
				}
			}
		}
		for _, ex := range []string{"quickstart", "fuel-mitaka", "tripleo-capabilities"} {
			runs = append(runs, []string{"--repo", filepath.Join(examples, ex), "--quiet", "render", "--out", filepath.Join(dir, "rendered", ex)})
		}
		for _, args := range runs {
			var stdout, stderr bytes.Buffer
			if code := run(append([]string{"fuelsync"}, args...), &stdout, &stderr); code != 0 {
				t.Fatalf("fuelsync %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
			}
			check(t, "fuelsync "+strings.Join(args, " "), stdout.String()+stderr.String())
		}
		n := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n++
			rel, _ := filepath.Rel(dir, p)
			check(t, rel, string(src))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < 100 {
			t.Errorf("only %d generated files", n)
		}
	})

	t.Run("repository", func(t *testing.T) {
		root := filepath.Join("..", "..")
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() {
				switch rel {
				case ".git", "bin", "rendered", ".fuelsync":
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n++
			rel = filepath.ToSlash(rel)
			if bytes.IndexByte(src, 0) >= 0 {
				return nil // binary
			}
			check(t, rel, string(src))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < 300 {
			t.Errorf("only %d files in the repository", n)
		}
	})
}
