package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// TestComplete: commands, subcommands, flags, and the names of examples/quickstart:
// clusters, nodes, tags (the node's own first), roles, releases, a node's tasks.
// Names are sorted as status, state show, tags list, roles list and the pages
// sort them (demo before demo-hcl, not in the files' order); a node's tasks are
// in the graph's order, as explain lists them.
func TestComplete(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	repo := filepath.Join("..", "..", "examples", "quickstart")
	for _, tc := range []struct {
		words string
		want  []string
	}{
		{"ro", []string{"roles"}},
		{"tags u", []string{"unassign", "update"}},
		{"tags assign --repo R --cluster ", []string{"demo", "demo-hcl"}},
		{"tags assign --repo R --cluster demo --node node-", []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"}},
		{"tags assign --repo R --cluster demo --node node-2 ", []string{"backup", "controller", "database", "rabbitmq", "compute", "monitor", "storage"}},
		{"tags unassign --repo R --cluster demo --node node-2 r", []string{"rabbitmq"}},
		{"roles assign --repo R --cluster demo --node node-4 s", []string{"storage"}},
		{"roles assign --repo R --cluster demo --node node-4 ", []string{"compute", "controller", "monitor", "storage"}},
		{"tags create --repo R --release ", []string{"quickstart-1.0"}},
		{"explain --repo R --cluster demo --node node-1 k", []string{"keystone"}},
		{"plan --d", []string{"--detailed-exitcode"}},
		// --path: the folder of --repo.
		{"tags assign --repo E --path quickstart --cluster demo --node node-", []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"}},
	} {
		words := strings.Split(strings.ReplaceAll(strings.ReplaceAll(tc.words, " R ", " "+repo+" "), " E ", " "+filepath.Dir(repo)+" "), " ")
		if diff := cmp.Diff(tc.want, complete(app, words)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.words, diff)
		}
	}
}

// TestCompletionScripts: the scripts are printed; bash's offers the quickstart's
// node and tag names through a real bash; zsh's and fish's parse when those shells
// are installed.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		var out bytes.Buffer
		if code := run([]string{"fuelsync", "completion", shell}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), "fuelsync __complete") {
			t.Errorf("completion %s: exit %d\n%s", shell, code, out.String())
		}
		path, ok := testenv.Have(t, shell, "apt-get install "+shell)
		if !ok {
			t.Logf("%s is not installed: its script is not run", shell)
			continue
		}
		if shell == "zsh" {
			if out, err := exec.Command(path, "-n", "-c", out.String()).CombinedOutput(); err != nil {
				t.Errorf("%s -n: %v\n%s", shell, err, out)
			}
			continue
		}
		// A fuelsync on PATH: this test binary as the CLI.
		bin := t.TempDir()
		writeBinaries(t, bin)
		script := filepath.Join(bin, "completion.bash")
		if err := os.WriteFile(script, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if shell == "fish" {
			cmd := exec.Command(path, "-c", `source $argv[1]; complete -C "fuelsync tags assign --cluster demo --node "`, script)
			cmd.Dir = filepath.Join("..", "..", "examples", "quickstart")
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			got, err := cmd.CombinedOutput()
			if want := "node-1\nnode-2\nnode-3\nnode-4\nnode-5\nnode-6"; err != nil || strings.TrimSpace(string(got)) != want {
				t.Errorf("fish completion: %v\n got %q\nwant %q", err, got, want)
			}
			continue
		}
		for words, want := range map[string]string{
			"fuelsync tags assign --cluster demo --node no":        "node-1 node-2 node-3 node-4 node-5 node-6",
			"fuelsync tags unassign --cluster demo --node node-2 ": "backup controller database rabbitmq compute monitor storage",
		} {
			cmd := exec.Command(path, "-c", `source "$1"; read -ra COMP_WORDS <<< "$2"; [[ "$2" == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _fuelsync; echo "${COMPREPLY[*]}"`, "bash", script, words)
			cmd.Dir = filepath.Join("..", "..", "examples", "quickstart")
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			got, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(got)) != want {
				t.Errorf("bash completion of %q: %v\n got %q\nwant %q", words, err, strings.TrimSpace(string(got)), want)
			}
		}
	}
}
