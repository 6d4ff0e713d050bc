package scaffold

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

// checkLines runs Check and gives its diagnostics as "severity file:line:col: summary".
func checkLines(t *testing.T, name string, files map[string][]byte) []string {
	t.Helper()
	diags, _ := Check(name, files)
	var out []string
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		out = append(out, fmt.Sprintf("%s %s:%d:%d: %s", sev, d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary))
	}
	slices.Sort(out)
	return out
}

// TestBuilderChecks: fuel-plugin-builder's checks of a plugin's deployment tasks and
// attributes, which plugin check makes and validate does not: the warning about a
// task without roles/groups/role (tags do not count for the builder), and errors for
// the builder's task types, parameters per type, strategy, reexecute_on, stage and
// attribute fields.
func TestBuilderChecks(t *testing.T) {
	o := Options{Name: "acme", PackageVersion: "4.0.0", Format: "yaml", Releases: []Compat{{OS: "ubuntu", Version: "quickstart-1.0"}}}
	base, err := Files(o)
	if err != nil {
		t.Fatal(err)
	}
	const dt = "deployment_tasks.yaml"
	for _, tc := range []struct {
		name, file, src string
		pv              string
		want            []string
	}{
		{name: "generated package", want: nil},
		{
			name: "task without roles, groups or role", file: dt,
			src: "- {id: a, type: shell, tags: [acme], parameters: {cmd: a.sh}}\n- {id: b, type: skipped}\n- {id: s, type: stage}\n- {id: c, type: shell, roles: [acme], parameters: {cmd: c.sh}}\n",
			want: []string{
				"warning deployment_tasks.yaml:1:8: Task a does not contain roles/groups/role fields. That may lead to tasks being unassigned to nodes.",
				"warning deployment_tasks.yaml:2:8: Task b does not contain roles/groups/role fields. That may lead to tasks being unassigned to nodes.",
			},
		},
		{
			// validator_v3 does not warn.
			name: "task without roles in a 3.0.0 package", file: dt, pv: "3.0.0",
			src: "- {id: a, type: shell, tags: [acme], parameters: {cmd: a.sh}}\n",
		},
		{
			name: "parameters per type", file: dt,
			src: "- {id: p, type: puppet, role: ['*'], parameters: {puppet_manifest: '', puppet_modules: m}}\n" +
				"- {id: s, type: shell, role: ['*'], parameters: {timeout: '60'}}\n" +
				"- {id: y, type: sync, role: ['*']}\n" +
				"- {id: c, type: copy_files, role: ['*'], parameters: {files: [{src: a, dst: b}], permissions: '644'}}\n",
			want: []string{
				"error deployment_tasks.yaml:1:50: task p: parameters: 'timeout' is a required property (a puppet task)",
				"error deployment_tasks.yaml:1:68: task p: parameters.puppet_manifest: '' is too short",
				"error deployment_tasks.yaml:2:49: task s: parameters: 'cmd' is a required property (a shell task)",
				"error deployment_tasks.yaml:2:59: task s: parameters.timeout: \"60\" is not of type 'integer'",
				"error deployment_tasks.yaml:3:8: task y: 'parameters' is a required property (a sync task)",
				"error deployment_tasks.yaml:4:95: task c: parameters.permissions: \"644\" does not match '^[0-7]{4}$'",
			},
		},
		{
			name: "task type nailgun knows and the builder does not", file: dt,
			src:  "- {id: m, type: master_shell, role: [master], parameters: {cmd: m.sh}}\n",
			want: []string{"error deployment_tasks.yaml:1:17: There is no such task type:master_shell"},
		},
		{
			name: "strategy, reexecute_on and stage", file: dt,
			src: "- {id: g, type: group, role: [acme], parameters: {strategy: {type: one-by-one}}}\n" +
				"- {id: h, type: shell, role: [acme], reexecute_on: [deploy_changes, always], stage: post_deployment/x, parameters: {cmd: h.sh}}\n",
			want: []string{
				"error deployment_tasks.yaml:1:68: task g: parameters.strategy.type \"one-by-one\" is not one of ['parallel', 'one_by_one']",
				"error deployment_tasks.yaml:2:69: task h: reexecute_on \"always\" is not one of ['deploy_changes']",
				"error deployment_tasks.yaml:2:85: task h: stage \"post_deployment/x\" does not match ^(post_deployment|pre_deployment)(/[-+]?([0-9]*\\.[0-9]+|[0-9]+))?$",
			},
		},
		{
			name: "release records", file: "metadata.yaml", src: "",
			want: []string{"error metadata.yaml:22:5: releases: mode \"ha_compact\" is not one of ['ha', 'multinode']",
				"error metadata.yaml:22:5: releases: os \"Ubuntu\" is not one of ['ubuntu', 'centos']"},
		},
		{
			name: "attribute fields", file: "environment_config.yaml",
			src: "attributes:\n  metadata: {label: Acme}\n  a: {value: x, type: text, label: A}\n  b: {value: x, type: text, label: B, weight: '1'}\n",
			want: []string{
				"error environment_config.yaml:3:3: attributes.a: 'weight' is a required property",
				"error environment_config.yaml:4:47: attributes.b.weight: \"1\" is not of type 'integer'",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string][]byte{}
			for k, v := range base {
				files[k] = v
			}
			switch {
			case tc.file == "metadata.yaml":
				meta := strings.Replace(string(files["metadata.yaml"]), "os: ubuntu", "os: Ubuntu", 1)
				files[tc.file] = []byte(strings.Replace(meta, "mode: [ha, multinode]", "mode: [ha_compact]", 1))
			case tc.file != "":
				files[tc.file] = []byte(tc.src)
			}
			if tc.pv == "3.0.0" {
				files = as300(t, files)
			}
			if diff := cmp.Diff(tc.want, checkLines(t, "acme", files)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// as300 turns the generated 4.0.0 package into a 3.0.0 one (without components).
func as300(t *testing.T, files map[string][]byte) map[string][]byte {
	t.Helper()
	meta := string(files["metadata.yaml"])
	const pv = "package_version: '4.0.0'"
	if !strings.Contains(meta, pv) {
		t.Fatalf("metadata.yaml has no %q:\n%s", pv, meta)
	}
	meta = strings.Replace(meta, pv, "package_version: '3.0.0'", 1)
	files["metadata.yaml"] = []byte(meta)
	delete(files, "components.yaml")
	return files
}

// TestBuilderChecksRealPlugins: the real contrail plugin has four tasks that
// fuel-plugin-builder warns about (overrides of release tasks without a selector);
// plugin check says so with warnings only.
func TestBuilderChecksRealPlugins(t *testing.T) {
	dir := filepath.Join("..", "examples", "fuel-mitaka", "plugins", "contrail")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	var warned []string
	for _, l := range checkLines(t, "contrail", files) {
		if strings.HasPrefix(l, "error") {
			t.Errorf("unexpected %s", l)
		}
		warned = append(warned, l)
	}
	want := []string{
		"warning deployment_tasks.yaml:1102:7: Task top-role-compute-vmware does not contain roles/groups/role fields. That may lead to tasks being unassigned to nodes.",
		"warning deployment_tasks.yaml:924:7: Task sriov_iommu_check does not contain roles/groups/role fields. That may lead to tasks being unassigned to nodes.",
		"warning deployment_tasks.yaml:927:7: Task sahara does not contain roles/groups/role fields. That may lead to tasks being unassigned to nodes.",
		"warning deployment_tasks.yaml:962:7: Task murano does not contain roles/groups/role fields. That may lead to tasks being unassigned to nodes.",
	}
	if diff := cmp.Diff(want, warned); diff != "" {
		t.Errorf("contrail (-want +got):\n%s", diff)
	}
}
