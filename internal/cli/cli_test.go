package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// leafCommands returns every visible command that runs something, by its path
// after "fuelsync".
func leafCommands(cmds []*cli.Command, parent string) map[string]*cli.Command {
	out := map[string]*cli.Command{}
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		path := strings.TrimSpace(parent + " " + c.Name)
		if len(c.Subcommands) > 0 {
			for p, sc := range leafCommands(c.Subcommands, path) {
				out[p] = sc
			}
			continue
		}
		out[path] = c
	}
	return out
}

// TestGlobalFlagsInAnyPosition checks, for every command, that each global flag
// its help lists is read when written after the command (and its arguments),
// overrides the same flag written before the command, and that a global flag the
// command does not list is refused there.
func TestGlobalFlagsInAnyPosition(t *testing.T) {
	values := map[string][]string{
		"repo": {"R1", "R2"}, "path": {"P1", "P2"}, "rev": {"V1", "V2"}, "workdir": {"W1", "W2"},
		"format": {"json", "markdown"}, "color": {"never", "always"},
		"state": {"etcd://127.0.0.1:1/a", "etcd://127.0.0.1:2/b"}, "etcd-cacert": {"CA1", "CA2"},
		"etcd-cert": {"C1", "C2"}, "etcd-key": {"K1", "K2"}, "etcd-auth-file": {"A1", "A2"},
		"etcd-lock-ttl": {"5s", "7s"},
	}
	get := func(g *globals, name string) string {
		switch name {
		case "repo":
			return g.repo
		case "path": // --repo (.) joined with --path
			return g.repo
		case "rev":
			return g.rev
		case "workdir":
			return g.workdir
		case "format":
			return string(g.format)
		case "color":
			return g.color
		case "state":
			return g.state
		}
		return ""
	}
	paths := map[string]bool{}
	for path := range leafCommands(newApp(io.Discard, io.Discard).Commands, "") {
		paths[path] = true
	}
	if len(paths) < 20 {
		t.Fatalf("found %d commands", len(paths))
	}
	for path := range paths {
		for _, name := range globalNames {
			if !slices.Contains(commandGlobals(path), name) || path == "agent" {
				continue // agent: the node agent's own command line (fuelsync-agent's)
			}
			t.Run(path+"/"+name, func(t *testing.T) {
				var got *globals
				var gotFlag string // the flags globals does not hold: --etcd-*
				app := newApp(io.Discard, io.Discard)
				cmd := leafCommands(app.Commands, "")[path]
				cmd.Before = nil // required flags: not what is tested here
				cmd.Action = func(c *cli.Context) error {
					g, err := readGlobals(c, io.Discard, io.Discard)
					got = g
					if name == "etcd-lock-ttl" {
						gotFlag = globalDuration(c, name).String()
					} else {
						gotFlag = globalString(c, name)
					}
					return err
				}
				words := strings.Fields(path)
				var args []string
				var want string
				if name == "quiet" {
					args = append(append([]string{"fuelsync"}, words...), "ARG", "-q")
				} else {
					v := values[name]
					want = v[1]
					args = append([]string{"fuelsync", "--" + name, v[0]}, words...)
					args = append(args, "ARG", "--"+name, v[1])
				}
				if err := app.Run(flagsFirst(app, args)); err != nil {
					t.Fatalf("%s: %v", strings.Join(args, " "), err)
				}
				if name == "quiet" {
					if !got.quiet {
						t.Errorf("%s: not quiet", strings.Join(args, " "))
					}
				} else if strings.HasPrefix(name, "etcd-") {
					if gotFlag != want {
						t.Errorf("%s: --%s is %q, want %q", strings.Join(args, " "), name, gotFlag, want)
					}
				} else if g := get(got, name); g != want {
					t.Errorf("%s: --%s is %q, want %q", strings.Join(args, " "), name, g, want)
				}
			})
		}
		t.Run(path+"/help", func(t *testing.T) {
			var out bytes.Buffer
			if code := run(append(append([]string{"fuelsync"}, strings.Fields(path)...), "--help"), &out, io.Discard); code != 0 {
				t.Fatalf("--help: exit %d", code)
			}
			page := out.String()
			_, global, _ := strings.Cut(page, "GLOBAL OPTIONS")
			global, _, _ = strings.Cut(global, "EXAMPLES:")
			for _, name := range globalNames {
				listed := strings.Contains(page, "   --"+name+" ") || strings.Contains(page, "   --"+name+", ")
				if slices.Contains(commandGlobals(path), name) && !listed {
					t.Errorf("fuelsync %s --help does not list --%s:\n%s", path, name, page)
				}
				if !slices.Contains(commandGlobals(path), name) && (strings.Contains(global, "--"+name+" ") || strings.Contains(global, "--"+name+",")) {
					t.Errorf("fuelsync %s --help lists --%s, which it ignores:\n%s", path, name, page)
				}
			}
			for _, section := range []string{"DESCRIPTION:", "EXAMPLES:", "EXIT STATUS:"} {
				if !strings.Contains(page, "\n"+section+"\n") && !(section == "DESCRIPTION:" && path == "version") {
					t.Errorf("fuelsync %s --help has no %s section:\n%s", path, section, page)
				}
			}
		})
	}
}

// TestSavedPlanHintRuns saves a plan made with non-default --repo and --workdir
// (one with a space and a quote in its name) and runs the apply command the hint
// prints, as printed, with sh.
func TestSavedPlanHintRuns(t *testing.T) {
	path := fuelsyncOnPath(t)
	dir := t.TempDir()
	repo := quickstartRepo(t)
	if err := os.Rename(repo, filepath.Join(dir, "qs")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	args := []string{"fuelsync", "--repo", "qs", "plan", "--workdir", "work dir's", "--out", "p3.json"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, stderr.String())
	}
	_, hint, ok := strings.Cut(stdout.String(), "apply it with: ")
	if !ok {
		t.Fatalf("no hint in:\n%s", stdout.String())
	}
	hint = strings.TrimSpace(hint)
	if want := `fuelsync --repo qs --workdir 'work dir'\''s' apply p3.json`; hint != want {
		t.Errorf("hint %q, want %q", hint, want)
	}
	cmd := exec.Command("sh", "-c", hint)
	cmd.Env = append(os.Environ(), "PATH="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", hint, err, out)
	}
	if !strings.Contains(string(out), "Apply complete: serial 1") {
		t.Errorf("%s:\n%s", hint, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "work dir's", "state.json")); err != nil {
		t.Error(err)
	}
}

// TestRenderFormatJSON checks render --format json against what it wrote: the
// clusters, the node count, the files and bytes under --out and the sha256 of
// manifest.json; a format render has no output for is refused before writing.
func TestRenderFormatJSON(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := run([]string{"fuelsync", "render", "--repo", "../../examples/quickstart", "--out", out, "--cluster", "demo", "--format", "json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var got renderSummary
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	var files int
	var size int64
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		files++
		size += fi.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(manifest)
	// The working tree's revision: the commit of this clone when
	// examples/quickstart is as committed (else +dirty), the manifest's.
	var m struct{ Revision string }
	if err := json.Unmarshal(manifest, &m); err != nil || m.Revision != got.Revision ||
		!regexp.MustCompile(`^([0-9a-f]{40}(\+dirty\.[0-9a-f]{12})?|working-tree)$`).MatchString(got.Revision) {
		t.Errorf("revision %q, the manifest's %q (%v): want the same, a commit or a working tree's", got.Revision, m.Revision, err)
	}
	want := renderSummary{FormatVersion: "1", Revision: got.Revision, Out: out, Clusters: []string{"demo"}, Nodes: 6,
		Files: files, Bytes: size, ManifestSHA256: hex.EncodeToString(sum[:])}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("render --format json (-want +got):\n%s", diff)
	}

	stdout.Reset()
	stderr.Reset()
	other := filepath.Join(dir, "other")
	if code := run([]string{"fuelsync", "render", "--repo", "../../examples/quickstart", "--out", other, "--format", "markdown"}, &stdout, &stderr); code != 1 {
		t.Errorf("--format markdown: exit %d, want 1", code)
	}
	if want := "fuelsync: render prints text or json, not \"markdown\"\n"; stderr.String() != want || stdout.Len() > 0 {
		t.Errorf("--format markdown: stdout %q, stderr %q, want stderr %q", stdout.String(), stderr.String(), want)
	}
	if _, err := os.Stat(other); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--format markdown wrote %s: %v", other, err)
	}
}

// TestHelpTableComplete checks that every visible command, groups included, has
// its entry in helpTable (examples, exit status, global flags) and no entry is
// left over.
func TestHelpTableComplete(t *testing.T) {
	seen := map[string]bool{}
	var walk func(cmds []*cli.Command, parent string)
	walk = func(cmds []*cli.Command, parent string) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			path := strings.TrimSpace(parent + " " + c.Name)
			seen[path] = true
			if _, ok := helpTable[path]; !ok {
				t.Errorf("no helpTable entry for %q", path)
			}
			walk(c.Subcommands, path)
		}
	}
	walk(newApp(io.Discard, io.Discard).Commands, "")
	for path, h := range helpTable {
		if !seen[path] {
			t.Errorf("helpTable entry %q names no command", path)
		}
		if len(h.examples) == 0 || h.exit == "" {
			t.Errorf("helpTable entry %q lacks examples or exit status", path)
		}
	}
}

// TestOutputFlagsEveryCommand: every command takes --format, --color and -q
// before or after its name (plugin check DIR --format json, explain … -q), and
// refuses a format it does not print, in either position, saying which it
// prints, instead of printing text (fuelsync --format json plugin check).
func TestOutputFlagsEveryCommand(t *testing.T) {
	for path, cmd := range leafCommands(newApp(io.Discard, io.Discard).Commands, "") {
		if path == "agent" {
			continue // the node agent's own command line (fuelsync-agent's): text logs, --log-format
		}
		formats := helpTable[path].formats
		if formats == "" {
			if flagNamed(cmd.Flags, "format") == nil {
				t.Errorf("%s: no formats in its help table entry", path)
			}
			continue // its own --format (plugin create: yaml or hcl)
		}
		words := strings.Fields(path)
		for _, args := range [][]string{
			append(append([]string{"fuelsync", "--format", "xml"}, words...), "ARG"),
			append(append([]string{"fuelsync"}, words...), "ARG", "--format", "xml"),
			append(append([]string{"fuelsync", "-q", "--color", "never", "--format", "xml"}, words...), "ARG"),
			append(append([]string{"fuelsync"}, words...), "ARG", "-q", "--color", "never", "--format", "xml"),
		} {
			stdout, stderr := new(bytes.Buffer), new(bytes.Buffer)
			code := run(args, stdout, stderr)
			f := strings.Fields(formats)
			list := f[0]
			if n := len(f); n > 1 {
				list = strings.Join(f[:n-1], ", ") + " or " + f[n-1]
			}
			want := "fuelsync: " + path + " prints " + list + `, not "xml"`
			if code == 0 || !strings.HasPrefix(stderr.String(), want) || stdout.Len() > 0 {
				t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s\nwant it refused: %s", strings.Join(args, " "), code, stdout, stderr, want)
			}
		}
	}
}
