package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/internal/release"
	"github.com/fuelsync/fuelsync/internal/testenv"
)

// ciRelease is the version of the release the CI examples install in the test.
const ciRelease = "v0.0.0-test"

// TestCIExamples runs examples/ci as the CI systems would: the install step
// downloads a release archive of make release (this test binary as fuelsync and
// fuelsync-server, packed by internal/release, served on loopback as
// FUELSYNC_RELEASES) with its SHA256SUMS, checks it and puts it on PATH; then
// the fuelsync commands (the GitHub Actions workflow's run steps, the GitLab
// job's script) run in a repository whose HEAD changes one node's tags against
// origin/main.
func TestCIExamples(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "sha256sum", "tar"} {
		testenv.Tool(t, tool, "the CI examples' install step runs it")
	}
	releases := ciReleases(t)
	for _, file := range []string{"github-actions.yml", "gitlab-ci.yml"} {
		t.Run(file, func(t *testing.T) {
			dir := quickstartRepo(t)
			r, err := git.PlainOpen(dir)
			if err != nil {
				t.Fatal(err)
			}
			base, err := r.Head()
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Storer.SetReference(plumbing.NewHashReference("refs/remotes/origin/main", base.Hash())); err != nil {
				t.Fatal(err)
			}
			unassignRabbitmq(t, dir)
			if _, err := gitCommit(dir, "node-2 without rabbitmq"); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join("..", "..", "examples", "ci", file))
			if err != nil {
				t.Fatal(err)
			}
			var script string
			if file == "github-actions.yml" {
				script = githubScript(t, data)
			} else {
				script = gitlabScript(t, data)
			}
			scratch := t.TempDir()
			script = regexp.MustCompile(`/tmp\b`).ReplaceAllLiteralString(script, scratch)
			// The fuelsync that ran is the release's.
			script += `test "$(command -v fuelsync)" = "$RUNNER_TEMP/fuelsync-` + ciRelease + `-linux-amd64/fuelsync"` + "\n"
			sh := exec.Command("bash", "-e", "-c", script)
			sh.Dir = dir
			sh.Env = append(os.Environ(), "FUELSYNC_RELEASES="+releases, "FUELSYNC_VERSION="+ciRelease,
				"RUNNER_TEMP="+scratch, "CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main", "NO_COLOR=1")
			if out, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s\n%s", file, err, script, out)
			}
			md, err := os.ReadFile(filepath.Join(dir, "fuelsync-diff.md"))
			if err != nil || !strings.Contains(string(md), "### fuelsync diff") || !strings.Contains(string(md), "tag rabbitmq unassigned") {
				t.Errorf("%s: fuelsync-diff.md: %v\n%s", file, err, md)
			}
		})
	}
}

// ciReleases packs this test binary as the release ciRelease for linux-amd64,
// as make release does, serves it as FUELSYNC_RELEASES/ciRelease/ on loopback
// and returns FUELSYNC_RELEASES.
func ciReleases(t *testing.T) string {
	t.Helper()
	bins := filepath.Join(t.TempDir(), "linux-amd64")
	if err := os.Mkdir(bins, 0o755); err != nil {
		t.Fatal(err)
	}
	writeBinaries(t, bins)
	dist := t.TempDir()
	if _, err := release.Write(dist, ciRelease, filepath.Join("..", "..", "README.md"), time.Unix(0, 0), []string{bins}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/"+ciRelease+"/", http.FileServer(http.Dir(dist))))
	t.Cleanup(srv.Close)
	return srv.URL
}

// githubScript is the workflow's steps as one bash script: the install step's
// run, with GITHUB_PATH read back into PATH, then the run steps of fuelsync.
func githubScript(t *testing.T, data []byte) string {
	t.Helper()
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string
				Run  string
			}
		}
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("export GITHUB_PATH=$RUNNER_TEMP/github-path\n")
	installed, ran := false, 0
	for _, st := range wf.Jobs["check"].Steps {
		switch {
		case st.Name == "install fuelsync":
			b.WriteString("(\n" + st.Run + ")\nexport PATH=\"$(cat $GITHUB_PATH):$PATH\"\n")
			installed = true
		case strings.HasPrefix(st.Run, "fuelsync "):
			b.WriteString(strings.ReplaceAll(st.Run, "${{ github.base_ref }}", "main") + "\n")
			ran++
		}
	}
	if !installed || ran < 2 {
		t.Fatalf("the workflow has no install step, or %d fuelsync steps", ran)
	}
	return b.String()
}

// gitlabScript is the job as GitLab runs it: before_script and script in one
// shell (the fetch of the target branch aside: the test repository has it).
func gitlabScript(t *testing.T, data []byte) string {
	t.Helper()
	var jobs map[string]struct {
		BeforeScript []string `yaml:"before_script"`
		Script       []string
	}
	if err := yaml.Unmarshal(data, &jobs); err != nil {
		t.Fatal(err)
	}
	job := jobs["fuelsync"]
	var b strings.Builder
	for _, line := range append(job.BeforeScript, job.Script...) {
		if !strings.HasPrefix(line, "git fetch ") {
			b.WriteString(line + "\n")
		}
	}
	if !strings.Contains(b.String(), "sha256sum -c") || len(job.Script) < 2 {
		t.Fatalf("the job checks no SHA256SUMS, or runs %d commands", len(job.Script))
	}
	return b.String()
}
