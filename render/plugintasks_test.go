package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPluginPathName: nailgun's path_name per package version — the full version
// for 1.0.x, major.minor (as StrictVersion reads it) for 2.0.0 and later.
func TestPluginPathName(t *testing.T) {
	for _, tc := range []struct {
		pv, version, want string
		err               bool
	}{
		{pv: "1.0.0", version: "1.0.1", want: "p-1.0.1"},
		{pv: "1.0.1", version: "2.3", want: "p-2.3"},
		{pv: "1.0.0", version: "1.0.0-dev", want: "p-1.0.0-dev"},
		{pv: "2.0.0", version: "1.2.3", want: "p-1.2"},
		{pv: "2.0.0", version: "1.0", want: "p-1.0"},
		{pv: "3.0.0", version: "3.1b2", want: "p-3.1"},
		{pv: "4.0.0", version: "01.10.0", want: "p-1.10"},
		{pv: "6.0.0", version: "10.0.0", want: "p-10.0"},
		{pv: "4.0.0", version: "1.0.0-dev", err: true},
		{pv: "4.0.0", version: "2", err: true},
		{pv: "5.0.0", version: "", err: true},
	} {
		got, err := PluginPathName("p", tc.version, tc.pv)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("PluginPathName(p, %q, %q) = %q, %v; want %q (error %v)", tc.version, tc.pv, got, err, tc.want, tc.err)
		}
	}
}

const defaultsRelease = `- {id: deploy_start, type: stage}
- {id: deploy_end, type: stage, requires: [deploy_start]}
- {id: rel-task, type: puppet, role: [compute], parameters: {puppet_manifest: rel.pp, puppet_modules: /etc/puppet/modules, timeout: 60}}
`

const defaultsPluginTasks = `- {id: plain, type: shell, role: [compute], parameters: {cmd: plain.sh, timeout: 60}}
- {id: own-cwd, type: shell, role: [compute], parameters: {cmd: own.sh, cwd: /opt/own/}}
- {id: empty-params, type: shell, role: [compute], parameters: {}}
- {id: no-params, type: shell, role: [compute]}
- {id: p1-role, type: group, role: [p1-role], tasks: [member], parameters: {strategy: {type: parallel}}}
- {id: other-group, type: group, role: [p1-role], fault_tolerance: 0, tasks: [member]}
- {id: member, type: shell, parameters: {cmd: member.sh}}
`

const defaultsPluginRoles = `p1-role:
  name: P1 role
  description: The plugin's role
  fault_tolerance: "50%"
other-group:
  name: Other
  description: A role whose group sets its own fault tolerance
  fault_tolerance: "100%"
`

// TestPluginTaskDefaults: nailgun's _add_defaults_to_task on a package_version 4.0.0
// plugin: cwd in the parameters of a task that has parameters and no cwd (an
// explicit cwd is kept, empty or absent parameters get nothing); a group without
// fault_tolerance takes its role's, a group with one keeps it. The release's tasks
// (a release-as-a-plugin's) get no cwd. The stored catalogue and the expanded view
// agree, and explain says where the cwd comes from.
func TestPluginTaskDefaults(t *testing.T) {
	cluster := strings.Replace(semCluster, "nodes:\n", "plugins: [p1]\nnodes:\n", 1) +
		"  node-6: {id: 6, roles: [p1-role]}\n  node-7: {id: 7, roles: [p1-role]}\n"
	files := graphFiles(semRelease, map[string]string{"default": defaultsRelease}, cluster)
	addPlugin(files, "p1", map[string]string{"deployment_tasks.yaml": defaultsPluginTasks, "node_roles.yaml": defaultsPluginRoles})
	r, diags := renderFiles(t, files, nil)
	noErrors(t, diags)

	const cwd = "/etc/fuel/plugins/p1-1.0/"
	doc := nodeArtifact(t, r, "node-4", "default")
	for id, want := range map[string]map[string]any{
		"plain":        {"cmd": "plain.sh", "timeout": 60, "cwd": cwd},
		"own-cwd":      {"cmd": "own.sh", "cwd": "/opt/own/"},
		"empty-params": {},
		"no-params":    nil,
		"rel-task":     {"puppet_manifest": "rel.pp", "puppet_modules": "/etc/puppet/modules", "timeout": 60},
	} {
		got, _ := artifactTask(t, doc, id)["parameters"].(map[string]any)
		if want == nil && got == nil {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: parameters (-want +got):\n%s", id, diff)
		}
	}
	member, _ := artifactTask(t, nodeArtifact(t, r, "node-6", "default"), "member")["parameters"].(map[string]any)
	if member["cwd"] != cwd {
		t.Errorf("member: cwd = %v, want %s", member["cwd"], cwd)
	}

	// The stored catalogue holds the same definition.
	files2, err := Files([]*Rendered{r}, "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	if cat := string(files2["prod/tasks/default.yaml"]); !strings.Contains(cat, "  plain:\n    parameters:\n      cmd: plain.sh\n      cwd: "+cwd+"\n") {
		t.Errorf("the catalogue's plain has no cwd:\n%s", cat)
	}

	// Fault tolerance: p1-role takes its role's 50% of 2 nodes (1); other-group keeps
	// its own 0 (its role's 100% would be 2).
	ft := map[string]int{}
	for _, f := range r.Graph("default").FaultTolerance {
		ft[f.Name] = f.FaultTolerance
	}
	if diff := cmp.Diff(map[string]int{"p1-role": 1, "other-group": 0}, ft); diff != "" {
		t.Errorf("fault tolerance (-want +got):\n%s", diff)
	}

	ex, err := r.Explain("default", "node-4", "plain")
	if err != nil {
		t.Fatal(err)
	}
	want := []DefaultExplanation{{Key: "parameters.cwd", Value: cwd, File: "plugins/p1/metadata.yaml", Line: 3,
		From: "nailgun's working directory for the tasks of plugin p1 (<name>-<major.minor>, package_version 4.0.0)"}}
	if diff := cmp.Diff(want, ex.Tasks[0].Defaults); diff != "" {
		t.Errorf("explain plain: defaults (-want +got):\n%s", diff)
	}
	if ex, _ := r.Explain("default", "node-4", "own-cwd"); len(ex.Tasks[0].Defaults) != 0 {
		t.Errorf("explain own-cwd: defaults %v, want none", ex.Tasks[0].Defaults)
	}
}

// TestPluginVersionNailgunCannotRead: a 4.0.0 plugin with tasks whose version is not
// major.minor[.patch] has no directory nailgun can name: an error at its version.
func TestPluginVersionNailgunCannotRead(t *testing.T) {
	cluster := strings.Replace(semCluster, "nodes:\n", "plugins: [p1]\nnodes:\n", 1)
	files := graphFiles(semRelease, map[string]string{"default": defaultsRelease}, cluster)
	addPlugin(files, "p1", map[string]string{"deployment_tasks.yaml": "- {id: plain, type: shell, role: [compute], parameters: {cmd: plain.sh}}\n"})
	files["plugins/p1/metadata.yaml"] = strings.Replace(files["plugins/p1/metadata.yaml"], "version: 1.0.0", "version: 1.0.0-dev", 1)
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags, diagAt{file: "plugins/p1/metadata.yaml", lineOf: "version: 1.0.0-dev", token: "1.0.0-dev",
		summary: `plugin p1: version "1.0.0-dev" is not major.minor[.patch] (what nailgun's StrictVersion reads)`})
}
