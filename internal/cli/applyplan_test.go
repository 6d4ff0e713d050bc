package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/state"
)

// TestApplyPlanFileChecks: every check `apply PLANFILE` makes refuses the plan
// with its own message and changes nothing (the state's serial and lineage, the
// current set). Each case names the check it exercises; each was verified by
// disabling that check and seeing the case fail.
func TestApplyPlanFileChecks(t *testing.T) {
	type env struct {
		repo, wd, plan string
	}
	// editPlan rewrites the plan file's JSON.
	editPlan := func(t *testing.T, path string, edit func(p map[string]any)) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		edit(p)
		if data, err = json.Marshal(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	artifacts := func(p map[string]any) map[string]any { return p["artifacts"].(map[string]any) }
	mustRun := func(t *testing.T, args ...string) {
		t.Helper()
		if code, stdout, stderr := revRun(t, args...); code != 0 {
			t.Fatalf("fuelsync %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}

	for _, tc := range []struct {
		name  string
		check string // what refuses the plan, and where
		// setup makes the plan file e.plan (the quickstart working tree
		// planned against e.wd: nothing applied yet) invalid.
		setup func(t *testing.T, e env)
		want  string // a regexp on stderr
	}{{
		name:  "the state moved since the plan",
		check: "Plan.CheckFresh in apply (internal/cli/plan.go), the serial",
		setup: func(t *testing.T, e env) {
			mustRun(t, "--repo", e.repo, "--workdir", e.wd, "-q", "apply", "--auto-approve")
		},
		want: `^fuelsync: the plan \S+/the\.plan is stale: it was made against state serial 0, but the state is now at serial 1 \(applied revision [0-9a-f]{12}\); run plan again; nothing was changed\n$`,
	}, {
		name:  "another work directory's plan",
		check: "Plan.CheckFresh in apply (internal/cli/plan.go), the lineage",
		setup: func(t *testing.T, e env) {
			// Both work directories at serial 1, each its own lineage; the
			// plan made against the other one.
			other := filepath.Join(filepath.Dir(e.wd), "other")
			for _, wd := range []string{e.wd, other} {
				mustRun(t, "--repo", e.repo, "--workdir", wd, "-q", "apply", "--auto-approve")
			}
			mustRun(t, "--repo", e.repo, "--workdir", other, "-q", "plan", "--out", e.plan)
		},
		want: `^fuelsync: the plan \S+/the\.plan is stale: it was made for state lineage [0-9a-f]+, but the work directory's state has lineage [0-9a-f]+; run plan again; nothing was changed\n$`,
	}, {
		name:  "not a plan file",
		check: "ReadPlan (operation/plan.go): the JSON",
		setup: func(t *testing.T, e env) {
			if err := os.WriteFile(e.plan, []byte("{\"format_version\": \"1\", \"artifacts\": {\x00"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		want: `^fuelsync: \S+/the\.plan is not a fuelsync plan file: invalid character`,
	}, {
		name:  "a plan file of another format",
		check: "ReadPlan (operation/plan.go): format_version",
		setup: func(t *testing.T, e env) {
			editPlan(t, e.plan, func(p map[string]any) { p["format_version"] = "2" })
		},
		want: `^fuelsync: \S+/the\.plan is not a fuelsync plan file of format_version 1\n$`,
	}, {
		name:  "a plan file without artifacts",
		check: "ReadPlan (operation/plan.go): artifacts",
		setup: func(t *testing.T, e env) {
			editPlan(t, e.plan, func(p map[string]any) { delete(p, "artifacts") })
		},
		want: `^fuelsync: \S+/the\.plan is not a fuelsync plan file of format_version 1\n$`,
	}, {
		name:  "no plan file",
		check: "ReadPlan (operation/plan.go): reading it",
		setup: func(t *testing.T, e env) {
			if err := os.Remove(e.plan); err != nil {
				t.Fatal(err)
			}
		},
		want: `^fuelsync: open \S+/the\.plan: no such file or directory\n$`,
	}, {
		name:  "the plan's revision is not in the repository",
		check: "planSource (internal/cli/plan.go): the revision the plan rendered",
		setup: func(t *testing.T, e env) {
			editPlan(t, e.plan, func(p map[string]any) { p["revision"] = strings.Repeat("0", 40) })
		},
		want: `0000000000000000000000000000000000000000`,
	}, {
		name:  "the configuration changed since the plan",
		check: "operation.samePlan (before Apply's own check): a rendered file's digest is not the plan's",
		setup: func(t *testing.T, e env) {
			// The plan of a clean tree names its commit, which no edit
			// changes: the plan of an edited (dirty) tree, then the edit
			// undone.
			p := filepath.Join(e.repo, "clusters", "demo.yaml")
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			unassignRabbitmq(t, e.repo)
			mustRun(t, "--repo", e.repo, "--workdir", e.wd, "-q", "plan", "--out", e.plan)
			if err := os.WriteFile(p, orig, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		// Files are checked as they are rendered, in parallel: the first to
		// differ (a file of demo, or the manifest) is named, and others may
		// follow.
		want: `^fuelsync: the plan \S+/the\.plan no longer matches its revision: (demo/\S+|manifest\.json) no longer renders as planned; run plan again; nothing was changed\n$`,
	}, {
		name:  "a planned file the configuration no longer renders",
		check: "operation.samePlan (before Apply's own check): every planned file was rendered",
		setup: func(t *testing.T, e env) {
			editPlan(t, e.plan, func(p map[string]any) {
				artifacts(p)["demo/nodes/node-9/default.yaml"] = strings.Repeat("a", 64)
			})
		},
		want: `^fuelsync: the plan \S+/the\.plan no longer matches its revision: demo/nodes/node-9/default\.yaml no longer renders as planned; run plan again; nothing was changed\n$`,
	}, {
		name:  "a rendered file the plan does not have",
		check: "operation.samePlan (before Apply's own check): a rendered file not in the plan",
		setup: func(t *testing.T, e env) {
			editPlan(t, e.plan, func(p map[string]any) { delete(artifacts(p), "demo/nodes/node-1/default.yaml") })
		},
		want: `^fuelsync: the plan \S+/the\.plan no longer matches its revision: demo/nodes/node-1/default\.yaml is rendered, but was not planned; run plan again; nothing was changed\n$`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e := env{repo: quickstartRepo(t), wd: filepath.Join(dir, "wd"), plan: filepath.Join(dir, "the.plan")}
			mustRun(t, "--repo", e.repo, "--workdir", e.wd, "-q", "plan", "--out", e.plan)
			tc.setup(t, e)
			before := workdirSnapshot(t, e.wd)
			code, stdout, stderr := revRun(t, "--repo", e.repo, "--workdir", e.wd, "apply", e.plan)
			if code != 1 || !regexp.MustCompile(tc.want).MatchString(stderr) {
				t.Errorf("%s: apply: exit %d, want 1 and stderr matching %s\nstdout:\n%s\nstderr:\n%s", tc.check, code, tc.want, stdout, stderr)
			}
			if after := workdirSnapshot(t, e.wd); after != before {
				t.Errorf("%s: the work directory changed: %s, was %s", tc.check, after, before)
			}
		})
	}

	// The plan the cases start from applies as it is.
	t.Run("a fresh plan", func(t *testing.T) {
		dir := t.TempDir()
		repo, wd, plan := quickstartRepo(t), filepath.Join(dir, "wd"), filepath.Join(dir, "the.plan")
		mustRun(t, "--repo", repo, "--workdir", wd, "-q", "plan", "--out", plan)
		mustRun(t, "--repo", repo, "--workdir", wd, "apply", plan)
		if got := workdirSnapshot(t, wd); !strings.HasPrefix(got, "serial 1 ") {
			t.Errorf("after applying the plan: %s", got)
		}
	})

	// The plan of a clean tree is the plan of its commit: it applies that
	// commit, whatever the working tree became since.
	t.Run("a commit's plan", func(t *testing.T) {
		dir := t.TempDir()
		repo, wd, plan := quickstartRepo(t), filepath.Join(dir, "wd"), filepath.Join(dir, "the.plan")
		mustRun(t, "--repo", repo, "--workdir", wd, "-q", "plan", "--out", plan)
		unassignRabbitmq(t, repo)
		mustRun(t, "--repo", repo, "--workdir", wd, "apply", plan)
		got := workdirSnapshot(t, wd)
		if !regexp.MustCompile(`^serial 1 lineage "[0-9a-f]+" revision "[0-9a-f]{40}" `).MatchString(got) {
			t.Errorf("after applying the plan: %s, want serial 1 at the commit", got)
		}
		data, err := os.ReadFile(filepath.Join(wd, "artifacts", "current", "demo", "nodes", "node-2", "default.yaml"))
		if err != nil || !strings.Contains(string(data), "id: rabbitmq") {
			t.Errorf("node-2's tasks: %v; want the commit's, rabbitmq among them\n%s", err, data)
		}
	})
}

// workdirSnapshot is what apply must not change when it refuses a plan: the
// state's serial, lineage and revision, and the set artifacts/current names.
func workdirSnapshot(t *testing.T, wd string) string {
	t.Helper()
	st, err := state.Open(wd).ReadState()
	if err != nil {
		t.Fatal(err)
	}
	current, _ := os.Readlink(filepath.Join(wd, "artifacts", "current"))
	return fmt.Sprintf("serial %d lineage %q revision %q current %q", st.Serial, st.Lineage, st.Revision, current)
}
