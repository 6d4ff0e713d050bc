package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/loader"
)

// The bad-input suite: a valid base repository, broken once per case.
// Every case runs `fuelsync --format json validate` on its own copy and checks the
// exit status, the position and the message of the diagnostic, and that validate
// wrote nothing.

// Base files. Cases pin line:column positions in them by counting; each case also
// names the token written at its position, which the test checks against the file it
// wrote, so a miscounted position fails as a test bug instead of echoing the tool.

// badBaseMeta is plugins/base/metadata.yaml: a 5.0.0 release-as-a-plugin package.
const badBaseMeta = `name: base
title: Base release
version: 1.0.0
package_version: 5.0.0
description: The base release, as a plugin
licenses: [Apache-2.0]
authors: [fuelsync]
homepage: https://example.com/base
groups: []
releases:
  - is_release: true
    release_name: base
    description: Base release
    operating_system: ubuntu
    version: base-1.0
    roles:
      controller:
        name: Controller
        description: Runs the control plane
        has_primary: true
      compute:
        name: Compute
        description: Runs instances
    tags:
      controller: {has_primary: true}
      compute: {has_primary: false}
    graphs:
      - type: default
        tasks_path: graphs/default.yaml
`

// Line 11: "  - is_release: true"; line 12: "    release_name: base";
// line 15: "    version: base-1.0"; line 29: "        tasks_path: graphs/default.yaml"
// (the value starts at column 21).
const badBaseTasksPath = "        tasks_path: graphs/default.yaml\n"

// badBaseGraph is plugins/base/graphs/default.yaml, the release's default graph.
const badBaseGraph = `- id: hiera
  type: puppet
  version: 2.1.0
  tags: [controller, compute]
  parameters: {puppet_manifest: hiera.pp, timeout: 120}
- id: database
  type: puppet
  version: 2.1.0
  tags: [controller]
  requires: [hiera]
  parameters: {puppet_manifest: database.pp, timeout: 300}
`

// badExtMeta is plugins/ext/metadata.yaml: a 4.0.0 plugin extending the release,
// with every field requiredMetadata("4.0.0") asks for.
const badExtMeta = `name: ext
title: An extension
version: 1.0.0
package_version: 4.0.0
fuel_version: ['9.0']
description: Extends the base release
licenses: [Apache-2.0]
authors: [fuelsync]
homepage: https://example.com/ext
groups: [network]
is_hotpluggable: false
releases:
  - os: ubuntu
    version: base-1.0
    mode: [ha]
`

const badExtRoles = `ext-role:
  name: Ext role
  description: The extension's role
`

const badExtTasks = `- id: ext-task
  type: shell
  version: 2.0.0
  roles: [ext-role]
  requires: [hiera]
  parameters: {cmd: /bin/true, timeout: 60}
`

const badExtComponents = `- name: network:ext
  label: Ext network
  requires:
    - name: hypervisor:*
`

const badProdCluster = `cluster: prod
release: base-1.0
plugins: [ext]
nodes:
  node-1: {id: 1, roles: [controller]}
  node-2: {id: 2, roles: [compute, ext-role]}
`

const badEdgeCluster = `cluster "edge" {
  release = "base-1.0"
  node "edge-1" {
    id    = 1
    roles = ["controller"]
  }
  node "edge-2" {
    roles = ["compute"]
  }
}
`

func badInputBase() map[string]string {
	return map[string]string{
		"plugins/base/metadata.yaml":        badBaseMeta,
		"plugins/base/graphs/default.yaml":  badBaseGraph,
		"plugins/ext/metadata.yaml":         badExtMeta,
		"plugins/ext/node_roles.yaml":       badExtRoles,
		"plugins/ext/deployment_tasks.yaml": badExtTasks,
		"plugins/ext/components.yaml":       badExtComponents,
		"clusters/prod.yaml":                badProdCluster,
		"clusters/edge.hcl":                 badEdgeCluster,
	}
}

// badEdit replaces the one occurrence of old in a base file.
type badEdit struct{ file, old, new string }

// badWant is the error diagnostic a case must produce.
type badWant struct {
	file      string // repository-relative; the CLI prints it behind the --repo prefix
	line, col int
	// token is the text written at line:col. It checks the pinned position against
	// the file itself, independently of the tool ("" when the file has no text: a
	// directory, a sparse file).
	token string
	// summary is a substring of the diagnostic's summary (the whole summary when
	// exact is set).
	summary string
	exact   bool
}

type badInputCase struct {
	name  string
	edits []badEdit
	files map[string]string // added or replaced files
	drop  []string          // base files removed
	// setup makes what a map of contents cannot: symlinks, sparse files. root is the
	// parent of the repository, for files that are outside it.
	setup func(t *testing.T, root, repo string)
	want  badWant
	// isolate runs the case in a child process: it crashes the process when the
	// loader gets it wrong (a stack overflow cannot be recovered).
	isolate bool
}

// badOutsideFile is written next to the repository (not inside it) in every case, so that
// escapes point at a file that exists.
const badOutsideFile = "outside.yaml"

func badInputCases() []badInputCase {
	tasksPathTo := func(p string) []badEdit {
		return []badEdit{{"plugins/base/metadata.yaml", badBaseTasksPath, "        tasks_path: " + p + "\n"}}
	}
	symlink := func(target func(root string) string, link string) func(t *testing.T, root, repo string) {
		return func(t *testing.T, root, repo string) {
			if err := os.Symlink(target(root), filepath.Join(repo, link)); err != nil {
				testenv.Unavailable(t, "symlinks unsupported: %v", err)
			}
		}
	}
	sparse := func(name string) func(t *testing.T, root, repo string) {
		return func(t *testing.T, root, repo string) {
			p := filepath.Join(repo, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("- id: big\n  type: shell\n"); err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(loader.DefaultMaxFileSize + 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	const bigSize = "67108865" // loader.DefaultMaxFileSize + 1

	return []badInputCase{
		// --- YAML and HCL syntax ---
		{
			// yaml.v3 reports the line only (where the unclosed flow sequence
			// starts), so the diagnostic marks the whole line from column 1.
			name:  "yaml syntax error in metadata.yaml",
			edits: []badEdit{{"plugins/ext/metadata.yaml", "groups: [network]\n", "groups: [network\n"}},
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 10, col: 1, token: "groups: [network", summary: "YAML syntax error: did not find expected ',' or ']'"},
		},
		{
			name:  "yaml syntax error in a tasks file",
			edits: []badEdit{{"plugins/base/graphs/default.yaml", "- id: database\n", " - id: database\n"}},
			want:  badWant{file: "plugins/base/graphs/default.yaml", line: 6, col: 2, token: "- id: database", summary: "YAML syntax error: did not find expected '-' indicator (check the indentation)"},
		},
		{
			name:  "yaml tab indentation in a cluster",
			edits: []badEdit{{"clusters/prod.yaml", "  node-1:", "\tnode-1:"}},
			want:  badWant{file: "clusters/prod.yaml", line: 5, col: 1, token: "\t", summary: "YAML syntax error: tabs are not allowed for indentation"},
		},
		{
			name:  "yaml unknown alias",
			edits: []badEdit{{"clusters/prod.yaml", "release: base-1.0\n", "release: *rel\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 2, col: 10, token: "*rel", summary: "unknown anchor 'rel' referenced"},
		},
		{
			// yaml.v3 reports reader errors without a line.
			name:  "invalid UTF-8 in a cluster",
			edits: []badEdit{{"clusters/prod.yaml", "plugins: [ext]\n", "plugins: [ext]\nnote: \xff\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 4, col: 7, token: "\xff", summary: "invalid leading UTF-8 octet"},
		},
		{
			name:  "control character in a cluster",
			edits: []badEdit{{"clusters/prod.yaml", "plugins: [ext]\n", "plugins: [ext]\nnote: a\x01b\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 4, col: 8, token: "\x01", summary: "control characters are not allowed"},
		},
		{
			name:  "deeply nested YAML",
			edits: []badEdit{{"clusters/prod.yaml", "plugins: [ext]\n", "plugins: [ext]\nextra: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 4, col: 1, token: "extra: [[[", summary: "YAML syntax error: exceeded max depth of 10000"},
		},
		{
			// An alias inside its own anchor would make the data tree a cycle, and
			// the _path walk of metadata.yaml would overflow the stack.
			name:    "YAML alias inside its own anchor",
			edits:   []badEdit{{"plugins/ext/metadata.yaml", "homepage: https://example.com/ext\n", "homepage: https://example.com/ext\nextra: &loop [*loop]\n"}},
			want:    badWant{file: "plugins/ext/metadata.yaml", line: 10, col: 15, token: "*loop", summary: "YAML alias *loop refers to its own anchor"},
			isolate: true,
		},
		{
			name:  "hcl syntax error in a cluster",
			edits: []badEdit{{"clusters/edge.hcl", `  release = "base-1.0"`, `  release = = "base-1.0"`}},
			want:  badWant{file: "clusters/edge.hcl", line: 2, col: 13, token: `= "base-1.0"`, summary: "Invalid expression"},
		},
		{
			name:  "hcl attribute set twice",
			edits: []badEdit{{"clusters/edge.hcl", "  node \"edge-1\" {\n", "  release = \"base-1.0\"\n  node \"edge-1\" {\n"}},
			want:  badWant{file: "clusters/edge.hcl", line: 3, col: 3, token: "release", summary: "Attribute redefined"},
		},
		{
			name: "hcl cluster with an unknown block",
			files: map[string]string{"clusters/edge.hcl": `cluster "edge" {
  release = "base-1.0"
  volume "data" {
    size = 10
  }
  node "edge-1" {
    roles = ["controller"]
  }
}
`},
			want: badWant{file: "clusters/edge.hcl", line: 3, col: 3, token: "volume", summary: `unexpected block "volume" in a cluster`},
		},
		{
			name: "hcl unknown top-level block",
			files: map[string]string{"clusters/edge.hcl": `resource "x" {}
cluster "edge" {
  release = "base-1.0"
}
`},
			want: badWant{file: "clusters/edge.hcl", line: 1, col: 1, token: "resource", summary: `unexpected block "resource"`},
		},

		{
			// The cluster block's brace is level 1, so the 10000th bracket, at column
			// 12+10000, opens level 10001: one past YAML's limit of 10000.
			name:    "deeply nested HCL",
			edits:   []badEdit{{"clusters/edge.hcl", `  release = "base-1.0"`, `  release = ` + strings.Repeat("[", 100000) + `"base-1.0"` + strings.Repeat("]", 100000)}},
			want:    badWant{file: "clusters/edge.hcl", line: 2, col: 10012, token: "[[[", summary: "deeper than 10000"},
			isolate: true,
		},
		{
			name:  "hcl node block without a label",
			edits: []badEdit{{"clusters/edge.hcl", `  node "edge-2" {`, `  node {`}},
			want:  badWant{file: "clusters/edge.hcl", line: 7, col: 3, token: "node {", summary: `a node block takes one label, its name`},
		},
		{
			name: "hcl locals that depend on each other",
			files: map[string]string{"clusters/edge.hcl": `locals {
  a = local.b
  b = local.a
}
cluster "edge" {
  release = "base-1.0"
}
`},
			want: badWant{file: "clusters/edge.hcl", line: 2, col: 3, token: "a = local.b", summary: "local.a depends on itself (a cycle among locals)"},
		},

		// --- the _path loader ---
		{
			name:  "_path to a missing file",
			edits: tasksPathTo("graphs/missing.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/missing.yaml", summary: "tasks_path: file plugins/base/graphs/missing.yaml does not exist"},
		},
		{
			name:  "_path glob with no match",
			edits: tasksPathTo("graphs/nomatch/*.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/nomatch/*.yaml", summary: "tasks_path: no .yaml, .yml or .json file matches plugins/base/graphs/nomatch/*.yaml"},
		},
		{
			name:  "_path glob mixing list and mapping roots",
			edits: tasksPathTo("graphs/*.yaml"),
			files: map[string]string{"plugins/base/graphs/zz-map.yaml": "extra: {}\n"},
			want: badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/*.yaml",
				summary: "tasks_path: the matched files mix lists and mappings: plugins/base/graphs/default.yaml is a list, plugins/base/graphs/zz-map.yaml is a mapping"},
		},
		{
			name:  "_path cycle",
			edits: []badEdit{{"plugins/base/metadata.yaml", "    version: base-1.0\n", "    version: base-1.0\n    attributes_path: attrs/a.yaml\n"}},
			files: map[string]string{
				"plugins/base/attrs/a.yaml": "editable:\n  x_path: b.yaml\n",
				"plugins/base/attrs/b.yaml": "common:\n  y_path: a.yaml\n",
			},
			want: badWant{file: "plugins/base/attrs/b.yaml", line: 2, col: 11, token: "a.yaml",
				summary: "_path cycle: plugins/base/attrs/a.yaml -> plugins/base/attrs/b.yaml -> plugins/base/attrs/a.yaml"},
		},
		{
			name:  "_path glob that does not parse",
			edits: tasksPathTo("graphs/[a.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/[a.yaml", summary: `tasks_path: bad glob "graphs/[a.yaml"`},
		},
		{
			name:  "_path that is not a data file",
			edits: tasksPathTo("graphs/default.txt"),
			files: map[string]string{"plugins/base/graphs/default.txt": badBaseGraph},
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/default.txt", summary: "tasks_path: plugins/base/graphs/default.txt is not a .yaml, .yml or .json file"},
		},
		{
			name:  "_path key next to its loaded key",
			edits: []badEdit{{"plugins/base/metadata.yaml", badBaseTasksPath, badBaseTasksPath + "        tasks: []\n"}},
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 9, token: "tasks_path", summary: "both tasks and tasks_path are set; keep one"},
		},

		// --- escapes and symlinks ---
		{
			// From plugins/base, ../../outside.yaml is the repository root; one more
			// level leaves it (and names a file that exists there).
			name:  "_path escaping the repository",
			edits: tasksPathTo("../../../outside.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "../../../outside.yaml", summary: `path "../../../outside.yaml" leaves the repository`},
		},
		{
			name:  "absolute _path",
			edits: tasksPathTo("/etc/passwd"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "/etc/passwd", summary: `path "/etc/passwd" is absolute`},
		},
		{
			name:  "URL _path",
			edits: tasksPathTo("https://example.com/x.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "https://example.com/x.yaml", summary: `path "https://example.com/x.yaml" is a URL`},
		},
		{
			name:  "absolute _path in a cluster",
			edits: []badEdit{{"clusters/prod.yaml", "plugins: [ext]\n", "plugins: [ext]\ntasks_path: /etc/passwd\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 4, col: 13, token: "/etc/passwd", summary: `path "/etc/passwd" is absolute`},
		},
		{
			name:  "symlink to an absolute path outside, via tasks_path",
			edits: tasksPathTo("graphs/evil.yaml"),
			setup: symlink(func(root string) string { return filepath.Join(root, badOutsideFile) }, "plugins/base/graphs/evil.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/evil.yaml", summary: "path escapes the repository"},
		},
		{
			name:  "relative symlink climbing out, via tasks_path",
			edits: tasksPathTo("graphs/evil.yaml"),
			setup: symlink(func(string) string { return "../../../../" + badOutsideFile }, "plugins/base/graphs/evil.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/evil.yaml", summary: "path escapes the repository"},
		},
		{
			name:  "glob matching a symlink outside",
			edits: tasksPathTo("graphs/*.yaml"),
			setup: symlink(func(string) string { return "../../../../" + badOutsideFile }, "plugins/base/graphs/evil.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/*.yaml", summary: "symlink plugins/base/graphs/evil.yaml points to ../../../../outside.yaml: path escapes the repository"},
		},
		{
			name:  "symlink loop via tasks_path",
			edits: tasksPathTo("graphs/loop.yaml"),
			setup: symlink(func(string) string { return "loop.yaml" }, "plugins/base/graphs/loop.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/loop.yaml", summary: "too many levels of symbolic links"},
		},
		{
			name:  "fixed plugin file that is a symlink outside",
			drop:  []string{"plugins/ext/node_roles.yaml"},
			setup: symlink(func(string) string { return "../../../" + badOutsideFile }, "plugins/ext/node_roles.yaml"),
			want:  badWant{file: "plugins/ext/node_roles.yaml", line: 1, col: 1, summary: "symlink plugins/ext/node_roles.yaml points to ../../../outside.yaml: path escapes the repository"},
		},
		{
			name:  "metadata.yaml that is a symlink outside",
			drop:  []string{"plugins/ext/metadata.yaml"},
			setup: symlink(func(string) string { return "../../../" + badOutsideFile }, "plugins/ext/metadata.yaml"),
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 1, col: 1, summary: "symlink plugins/ext/metadata.yaml points to ../../../outside.yaml: path escapes the repository"},
		},
		{
			name:  "cluster file that is a symlink outside",
			setup: symlink(func(root string) string { return filepath.Join(root, badOutsideFile) }, "clusters/evil.yaml"),
			want:  badWant{file: "clusters/evil.yaml", line: 1, col: 1, token: "", summary: "symlink clusters/evil.yaml points to"},
		},
		{
			name: "plugin directory that is a symlink outside",
			setup: func(t *testing.T, root, repo string) {
				dir := filepath.Join(root, "outside-plugin")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte(strings.Replace(badExtMeta, "name: ext", "name: evil", 1)), 0o644); err != nil {
					t.Fatal(err)
				}
				symlink(func(string) string { return dir }, "plugins/evil")(t, root, repo)
			},
			want: badWant{file: "plugins/evil", line: 1, col: 1, summary: "path escapes the repository"},
		},
		{
			name: "cluster directory that is a symlink outside",
			setup: func(t *testing.T, root, repo string) {
				dir := filepath.Join(root, "outside-cluster")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte("release: base-1.0\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				symlink(func(string) string { return "../../outside-cluster" }, "clusters/evil")(t, root, repo)
			},
			want: badWant{file: "clusters/evil", line: 1, col: 1, summary: "symlink clusters/evil points to ../../outside-cluster: path escapes the repository"},
		},

		// --- plugin metadata ---
		{
			name:  "unknown package_version",
			edits: []badEdit{{"plugins/ext/metadata.yaml", "package_version: 4.0.0", "package_version: 7.0.0"}},
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 4, col: 18, token: "7.0.0", summary: `unsupported package_version "7.0.0"; supported versions are 3.0.0, 4.0.0, 5.0.0, 6.0.0`},
		},
		{
			name:  "missing title in a 4.0.0 plugin",
			edits: []badEdit{{"plugins/ext/metadata.yaml", "title: An extension\n", ""}},
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 1, col: 1, token: "name", summary: `plugin ext: missing required field "title" in metadata.yaml`},
		},
		{
			name:  "missing is_hotpluggable in a 4.0.0 plugin",
			edits: []badEdit{{"plugins/ext/metadata.yaml", "is_hotpluggable: false\n", ""}},
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 1, col: 1, token: "name", summary: `plugin ext: missing required field "is_hotpluggable" in metadata.yaml`},
		},
		{
			name:  "empty metadata.yaml",
			files: map[string]string{"plugins/ext/metadata.yaml": ""},
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 1, col: 1, summary: "plugins/ext/metadata.yaml is empty; it must be a mapping"},
		},
		{
			name:  "plugin directory without metadata",
			files: map[string]string{"plugins/empty/README.md": "nothing here\n"},
			want:  badWant{file: "plugins/empty", line: 1, col: 1, summary: "plugin directory plugins/empty has no metadata.yaml"},
		},
		{
			name:  "invalid plugin name",
			edits: []badEdit{{"plugins/ext/metadata.yaml", "name: ext\n", "name: Bad Name\n"}},
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 1, col: 7, token: "Bad Name", summary: `invalid plugin name "Bad Name"`},
		},
		{
			name:  "unknown plugin group",
			edits: []badEdit{{"plugins/ext/metadata.yaml", "groups: [network]", "groups: [networking]"}},
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 10, col: 10, token: "networking", summary: `plugin ext: unknown group "networking"`},
		},
		{
			name:  "fuel_version too old for the package format",
			edits: []badEdit{{"plugins/ext/metadata.yaml", "fuel_version: ['9.0']", "fuel_version: ['7.0']"}},
			want:  badWant{file: "plugins/ext/metadata.yaml", line: 5, col: 16, token: "'7.0'", summary: "Current plugin format 4.0.0 is not compatible with 7.0 Fuel release"},
		},

		// --- roles, tasks, components ---
		{
			name:  "invalid role name",
			files: map[string]string{"plugins/ext/node_roles.yaml": badExtRoles + "bad role!:\n  name: Bad\n  description: A bad role\n"},
			want:  badWant{file: "plugins/ext/node_roles.yaml", line: 4, col: 1, token: "bad role!", summary: `invalid role name "bad role!"`},
		},
		{
			// The subject is the role's mapping, which lacks the field.
			name:  "plugin role without description",
			files: map[string]string{"plugins/ext/node_roles.yaml": "ext-role:\n  name: Ext role\n"},
			want:  badWant{file: "plugins/ext/node_roles.yaml", line: 2, col: 3, token: "name", summary: `role ext-role: missing required field "description"`},
		},
		{
			name:  "invalid task id",
			edits: []badEdit{{"plugins/ext/deployment_tasks.yaml", "- id: ext-task\n", "- id: bad id\n"}},
			want:  badWant{file: "plugins/ext/deployment_tasks.yaml", line: 1, col: 7, token: "bad id", summary: `invalid task id "bad id"`},
		},
		{
			name:  "unknown task type",
			edits: []badEdit{{"plugins/ext/deployment_tasks.yaml", "  type: shell\n", "  type: ansible\n"}},
			want:  badWant{file: "plugins/ext/deployment_tasks.yaml", line: 2, col: 9, token: "ansible", summary: `task ext-task: unknown type "ansible"`},
		},
		{
			name:  "task version that is not x.y.z",
			edits: []badEdit{{"plugins/ext/deployment_tasks.yaml", "  version: 2.0.0\n", "  version: 2.1\n"}},
			want:  badWant{file: "plugins/ext/deployment_tasks.yaml", line: 3, col: 12, token: "2.1", summary: `task ext-task: version "2.1" must look like 1.0.0`},
		},
		{
			name:  "selector regex that does not compile",
			edits: []badEdit{{"plugins/ext/deployment_tasks.yaml", "  roles: [ext-role]\n", "  roles: ['/(unclosed/']\n"}},
			want:  badWant{file: "plugins/ext/deployment_tasks.yaml", line: 4, col: 11, token: "'/(unclosed/'", summary: "task ext-task: roles: regular expression /(unclosed/ does not compile"},
		},
		{
			name:  "requires regex that does not compile",
			edits: []badEdit{{"plugins/ext/deployment_tasks.yaml", "  requires: [hiera]\n", "  requires: [hiera, '/[a-/']\n"}},
			want:  badWant{file: "plugins/ext/deployment_tasks.yaml", line: 5, col: 21, token: "'/[a-/'", summary: "task ext-task: requires: regular expression /[a-/ does not compile"},
		},
		{
			name:  "duplicate task ids in one graph",
			edits: []badEdit{{"plugins/base/graphs/default.yaml", "- id: database\n", "- id: hiera\n"}},
			want:  badWant{file: "plugins/base/graphs/default.yaml", line: 6, col: 7, token: "hiera", summary: `duplicate task id "hiera" (also at plugins/base/graphs/default.yaml:1)`},
		},
		{
			name:  "invalid component name",
			edits: []badEdit{{"plugins/ext/components.yaml", "- name: network:ext\n", "- name: networkx:foo\n"}},
			want:  badWant{file: "plugins/ext/components.yaml", line: 1, col: 9, token: "networkx:foo", summary: `invalid component name "networkx:foo"`},
		},
		{
			name:  "invalid component reference in requires",
			edits: []badEdit{{"plugins/ext/components.yaml", "    - name: hypervisor:*\n", "    - name: hypervisor:QEMU\n"}},
			want:  badWant{file: "plugins/ext/components.yaml", line: 4, col: 13, token: "hypervisor:QEMU", summary: `component network:ext: requires: invalid component reference "hypervisor:QEMU"`},
		},

		// --- releases ---
		{
			name:  "plugin that defines and extends releases",
			edits: []badEdit{{"plugins/base/metadata.yaml", badBaseTasksPath, badBaseTasksPath + "  - os: ubuntu\n    version: base-1.0\n"}},
			want:  badWant{file: "plugins/base/metadata.yaml", line: 30, col: 5, token: "os", summary: "plugin base both defines a release and extends releases; a plugin does one or the other"},
		},
		{
			// Without line 12 the record starts at line 11, column 5.
			name:  "release record without release_name",
			edits: []badEdit{{"plugins/base/metadata.yaml", "    release_name: base\n", ""}},
			want:  badWant{file: "plugins/base/metadata.yaml", line: 11, col: 5, token: "is_release", summary: `release: missing required field "release_name"`},
		},
		{
			// The record's version and operating_system choose the fixture item, so
			// the error belongs at the record's base_release_path, not at the top of
			// the fixture.
			name:  "base_release fixture with no matching item",
			edits: []badEdit{{"plugins/base/metadata.yaml", "    version: base-1.0\n", "    version: base-1.0\n    base_release_path: fixture.yaml\n"}},
			files: map[string]string{"plugins/base/fixture.yaml": `- pk: 1
  model: release
  fields:
    name: Other
    version: other-2.0
    operating_system: ubuntu
`},
			want: badWant{file: "plugins/base/metadata.yaml", line: 16, col: 5, token: "base_release_path",
				summary: `no item of the base release fixture has version "base-1.0" and operating_system "ubuntu"; candidates: pk 1 "Other" (other-2.0, ubuntu)`},
		},

		// --- clusters ---
		{
			// The repeat is the error; it names the first definition.
			name:  "duplicate node names in YAML",
			edits: []badEdit{{"clusters/prod.yaml", "  node-2: {id: 2, roles: [compute, ext-role]}\n", "  node-2: {id: 2, roles: [compute, ext-role]}\n  node-1: {id: 3, roles: [compute]}\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 7, col: 3, token: "node-1", summary: `cluster prod: node "node-1" is defined twice`},
		},
		{
			name: "duplicate node names in HCL",
			files: map[string]string{"clusters/edge.hcl": `cluster "edge" {
  release = "base-1.0"
  node "edge-1" {
    roles = ["controller"]
  }
  node "edge-1" {
    roles = ["compute"]
  }
}
`},
			want: badWant{file: "clusters/edge.hcl", line: 6, col: 8, token: `"edge-1"`, summary: `cluster edge: node "edge-1" is defined twice`},
		},
		{
			name:  "duplicate node ids",
			edits: []badEdit{{"clusters/prod.yaml", "node-2: {id: 2,", "node-2: {id: 1,"}},
			want:  badWant{file: "clusters/prod.yaml", line: 6, col: 12, token: "id", summary: "cluster prod: node node-2: id 1 is already used by node node-1"},
		},
		{
			name:  "invalid node name",
			edits: []badEdit{{"clusters/prod.yaml", "  node-1:", "  Node_1:"}},
			want:  badWant{file: "clusters/prod.yaml", line: 5, col: 3, token: "Node_1", summary: `invalid node name "Node_1"`},
		},
		{
			name:  "reserved node name",
			edits: []badEdit{{"clusters/prod.yaml", "  node-1:", "  sync:"}},
			want:  badWant{file: "clusters/prod.yaml", line: 5, col: 3, token: "sync", summary: `cluster prod: node name "sync" is reserved`},
		},
		{
			name:  "unknown release in a cluster",
			edits: []badEdit{{"clusters/prod.yaml", "release: base-1.0\n", "release: nope\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 2, col: 10, token: "nope", summary: `cluster prod: unknown release "nope"; known releases: base-1.0 (base)`},
		},
		{
			name:  "unknown release in an HCL cluster",
			edits: []badEdit{{"clusters/edge.hcl", `release = "base-1.0"`, `release = "nope"`}},
			want:  badWant{file: "clusters/edge.hcl", line: 2, col: 13, token: `"nope"`, summary: `cluster edge: unknown release "nope"`},
		},
		{
			name:  "unknown plugin in a cluster",
			edits: []badEdit{{"clusters/prod.yaml", "plugins: [ext]\n", "plugins: [ext, nope]\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 3, col: 16, token: "nope", summary: `cluster prod: unknown plugin "nope"; plugins in this repository: ext`},
		},
		{
			name:  "cluster spec that is a list",
			files: map[string]string{"clusters/prod.yaml": "- cluster: prod\n- release: base-1.0\n"},
			want:  badWant{file: "clusters/prod.yaml", line: 1, col: 1, token: "-", summary: "a cluster spec must be a mapping, not a list"},
		},
		{
			name:  "unknown cluster mode",
			edits: []badEdit{{"clusters/prod.yaml", "release: base-1.0\n", "release: base-1.0\nmode: active\n"}},
			want:  badWant{file: "clusters/prod.yaml", line: 3, col: 7, token: "active", summary: `cluster prod: mode must be ha or multinode, not "active"`},
		},
		{
			name: "cluster in a repository without releases",
			drop: []string{"plugins/base/metadata.yaml", "plugins/base/graphs/default.yaml"},
			want: badWant{file: "clusters/prod.yaml", line: 2, col: 10, token: "base-1.0", summary: "cluster prod: " + loader.MsgNoReleases, exact: true},
		},

		// --- resource limits ---
		{
			name:  "billion laughs as a tasks file",
			files: map[string]string{"plugins/base/graphs/default.yaml": badBillionLaughs()},
			want:  badWant{file: "plugins/base/graphs/default.yaml", line: 1, col: 1, token: "- &a", summary: "YAML aliases expand to"},
		},
		{
			name:  "oversized deployment_tasks.yaml",
			setup: sparse("plugins/ext/deployment_tasks.yaml"),
			want:  badWant{file: "plugins/ext/deployment_tasks.yaml", line: 1, col: 1, summary: "file plugins/ext/deployment_tasks.yaml is " + bigSize + " bytes, over the 64 MiB limit"},
		},
		{
			// Read through a reference, the error is at the reference.
			name:  "oversized file behind tasks_path",
			edits: tasksPathTo("graphs/big.yaml"),
			setup: sparse("plugins/base/graphs/big.yaml"),
			want:  badWant{file: "plugins/base/metadata.yaml", line: 29, col: 21, token: "graphs/big.yaml", summary: "file plugins/base/graphs/big.yaml is " + bigSize + " bytes, over the 64 MiB limit"},
		},
	}
}

// badBillionLaughs is a YAML list of 9 anchors, each holding 9 aliases of the one
// before: 9^9 leaves once expanded, from a file of a few hundred bytes.
func badBillionLaughs() string {
	var b strings.Builder
	b.WriteString("- &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for c := 'b'; c <= 'i'; c++ {
		alias := "*" + string(c-1)
		b.WriteString("- &" + string(c) + " [" + strings.Repeat(alias+", ", 8) + alias + "]\n")
	}
	return b.String()
}

// badValidateJSON is the document `validate --format json` prints.
type badValidateJSON struct {
	FormatVersion string `json:"format_version"`
	Valid         bool   `json:"valid"`
	ErrorCount    int    `json:"error_count"`
	WarningCount  int    `json:"warning_count"`
	Diagnostics   []struct {
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Detail   string `json:"detail"`
		Range    *struct {
			Filename string `json:"filename"`
			Start    struct {
				Line   int `json:"line"`
				Column int `json:"column"`
				Byte   int `json:"byte"`
			} `json:"start"`
			End struct {
				Line   int `json:"line"`
				Column int `json:"column"`
				Byte   int `json:"byte"`
			} `json:"end"`
		} `json:"range"`
	} `json:"diagnostics"`
}

// badBuildRepo writes the base repository with the case's changes under root/repo,
// and outside.yaml next to it.
func badBuildRepo(t *testing.T, tc badInputCase) (root, repo string) {
	t.Helper()
	root = t.TempDir()
	repo = filepath.Join(root, "repo")
	files := badInputBase()
	for _, e := range tc.edits {
		src, ok := files[e.file]
		if !ok {
			t.Fatalf("edit of %s: not a base file", e.file)
		}
		if n := strings.Count(src, e.old); n != 1 {
			t.Fatalf("edit of %s: %q occurs %d times, want once", e.file, e.old, n)
		}
		files[e.file] = strings.Replace(src, e.old, e.new, 1)
	}
	for name, src := range tc.files {
		files[name] = src
	}
	for _, name := range tc.drop {
		if _, ok := files[name]; !ok {
			t.Fatalf("drop of %s: not a base file", name)
		}
		delete(files, name)
	}
	for name, src := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, badOutsideFile), []byte("- id: outside\n  type: shell\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if tc.setup != nil {
		tc.setup(t, root, repo)
	}
	return root, repo
}

// badRunMu serialises calls of run from the parallel subtests.
var badRunMu sync.Mutex

// badFileState is what a snapshot records of one path.
type badFileState struct {
	Mode  fs.FileMode
	Size  int64
	MTime int64
	Link  string
}

// badSnapshot records every path under root without following symlinks.
func badSnapshot(t *testing.T, root string) map[string]badFileState {
	t.Helper()
	out := map[string]badFileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := badFileState{Mode: fi.Mode(), Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if st.Link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		if fi.IsDir() {
			st.Size = 0 // a directory's size is file-system dependent noise
		}
		out[p] = st
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// badRunValidate runs `fuelsync --repo repo [--format json] validate` and checks that it
// wrote nothing, neither in the repository (nor next to it) nor a workdir.
func badRunValidate(t *testing.T, root, repo string, json bool) (code int, stdout, stderr string) {
	t.Helper()
	_, wdErr := os.Stat(".fuelsync")
	before := badSnapshot(t, root)
	args := []string{"fuelsync", "--repo", repo}
	if json {
		args = append(args, "--format", "json")
	}
	args = append(args, "validate")
	var out, errOut bytes.Buffer
	// run is not safe for concurrent use: urfave/cli sets up shared flags (the
	// global help flag) on every run.
	badRunMu.Lock()
	code = run(args, &out, &errOut)
	badRunMu.Unlock()
	if diff := cmp.Diff(before, badSnapshot(t, root)); diff != "" {
		t.Errorf("validate changed the file system (-before +after):\n%s", diff)
	}
	if _, err := os.Stat(".fuelsync"); errors.Is(wdErr, fs.ErrNotExist) && err == nil {
		t.Errorf("validate created the workdir .fuelsync")
	}
	return code, out.String(), errOut.String()
}

// badCheckToken checks that the file at repo/file has want.token at want.line:want.col
// (columns in characters) and returns the byte offset of that position.
func badCheckToken(t *testing.T, repo string, want badWant) int {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(want.file)))
	if err != nil {
		t.Fatalf("reading %s to check the pinned position: %v", want.file, err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	if want.line < 1 || want.line > len(lines) {
		t.Fatalf("test bug: %s has %d lines, want.line is %d", want.file, len(lines), want.line)
	}
	off := 0
	for _, l := range lines[:want.line-1] {
		off += len(l)
	}
	line := lines[want.line-1]
	i := 0
	for c := 1; c < want.col && i < len(line); c++ {
		_, size := utf8.DecodeRuneInString(line[i:])
		i += size
	}
	if !strings.HasPrefix(line[i:], want.token) {
		t.Fatalf("test bug: %s:%d:%d reads %q, not %q", want.file, want.line, want.col, strings.TrimSuffix(line[i:], "\n"), want.token)
	}
	return off + i
}

// badCheckCase runs one case and returns what is wrong with the tool's answer.
// Failures of the test itself (a position that does not match the fixture, a
// validate that wrote to disk) are reported directly.
func badCheckCase(t *testing.T, tc badInputCase) []string {
	t.Helper()
	root, repo := badBuildRepo(t, tc)
	wantByte := -1
	if tc.want.token != "" {
		wantByte = badCheckToken(t, repo, tc.want)
	}
	code, stdout, stderr := badRunValidate(t, root, repo, true)
	var problems []string
	if code != 1 {
		problems = append(problems, fmt.Sprintf("exit code %d, want 1", code))
	}
	var got badValidateJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		return append(problems, fmt.Sprintf("decoding the JSON output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr))
	}
	nerr := 0
	for _, d := range got.Diagnostics {
		if d.Severity == "error" {
			nerr++
		}
	}
	if got.Valid || got.ErrorCount == 0 || got.ErrorCount != nerr {
		problems = append(problems, fmt.Sprintf("valid %v, error_count %d, %d error diagnostics; want invalid with a consistent count", got.Valid, got.ErrorCount, nerr))
	}
	prefix := filepath.ToSlash(filepath.Clean(repo)) + "/"
	wantFile := prefix + tc.want.file
	for _, d := range got.Diagnostics {
		r := d.Range
		if d.Severity != "error" || r == nil || r.Filename != wantFile || r.Start.Line != tc.want.line || r.Start.Column != tc.want.col {
			continue
		}
		if (tc.want.exact && d.Summary != tc.want.summary) || !strings.Contains(d.Summary, tc.want.summary) {
			continue
		}
		if wantByte >= 0 && r.Start.Byte != wantByte {
			problems = append(problems, fmt.Sprintf("start byte %d, want %d (line %d, column %d)", r.Start.Byte, wantByte, tc.want.line, tc.want.col))
		}
		if r.End.Line < r.Start.Line || (r.End.Line == r.Start.Line && r.End.Column < r.Start.Column) {
			problems = append(problems, fmt.Sprintf("range ends at %d:%d, before its start", r.End.Line, r.End.Column))
		}
		return problems
	}
	var b strings.Builder
	for _, d := range got.Diagnostics {
		if r := d.Range; r != nil {
			fmt.Fprintf(&b, "%s:%d:%d: ", strings.TrimPrefix(r.Filename, prefix), r.Start.Line, r.Start.Column)
		}
		fmt.Fprintf(&b, "%s: %s\n", d.Severity, d.Summary)
	}
	return append(problems, fmt.Sprintf("no error diagnostic at %s:%d:%d with summary %q; got:\n%s", tc.want.file, tc.want.line, tc.want.col, tc.want.summary, b.String()))
}

// badInputChildEnv names the case TestBadInputChild runs.
const badInputChildEnv = "FUELSYNC_BADINPUT_CASE"

// badRunChild runs one case in a child process (the test binary running
// TestBadInputChild) and returns its failures.
func badRunChild(t *testing.T, tc badInputCase) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBadInputChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), badInputChildEnv+"="+tc.name)
	out, err := cmd.CombinedOutput()
	if err == nil {
		if !bytes.Contains(out, []byte("--- PASS: TestBadInputChild")) {
			t.Fatalf("the child process did not run the case:\n%s", out)
		}
		return nil
	}
	lines := strings.SplitN(string(out), "\n", 13)
	return []string{fmt.Sprintf("in a child process: %v\n%s", err, strings.Join(lines[:min(len(lines), 12)], "\n"))}
}

// TestBadInputChild runs the case named by $FUELSYNC_BADINPUT_CASE, in a child process
// started by TestBadInput, with a small stack so that a runaway recursion fails fast.
func TestBadInputChild(t *testing.T) {
	name := os.Getenv(badInputChildEnv)
	if name == "" {
		t.Skip("runs only as a child of TestBadInput")
	}
	debug.SetMaxStack(64 << 20)
	for _, tc := range badInputCases() {
		if tc.name == name {
			for _, p := range badCheckCase(t, tc) {
				t.Error(p)
			}
			return
		}
	}
	t.Fatalf("no bad-input case %q", name)
}

func TestBadInput(t *testing.T) {
	t.Run("base is valid", func(t *testing.T) {
		t.Parallel()
		root, repo := badBuildRepo(t, badInputCase{})
		code, stdout, stderr := badRunValidate(t, root, repo, true)
		var got badValidateJSON
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("decoding the JSON output: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
		if code != 0 || !got.Valid || got.ErrorCount != 0 || got.WarningCount != 0 {
			t.Fatalf("exit %d, valid %v, %d errors, %d warnings; want a clean base\n%s", code, got.Valid, got.ErrorCount, got.WarningCount, stdout)
		}
	})

	cases := badInputCases()
	if len(cases) < 30 {
		t.Fatalf("%d cases, want at least 30", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("case %q is defined twice", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var problems []string
			if tc.isolate {
				problems = badRunChild(t, tc)
			} else {
				problems = badCheckCase(t, tc)
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}

	// Text mode: compiler-style first line, then the source line and a caret line
	// under the range.
	t.Run("text output", func(t *testing.T) {
		t.Parallel()
		root, repo := badBuildRepo(t, badInputCase{edits: []badEdit{{"plugins/base/graphs/default.yaml", "  version: 2.1.0\n  tags: [controller]\n", "  version: 2.1\n  tags: [controller]\n"}}})
		code, stdout, stderr := badRunValidate(t, root, repo, false)
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		prefix := filepath.ToSlash(filepath.Clean(repo)) + "/"
		want := prefix + `plugins/base/graphs/default.yaml:8:12: error: task database: version "2.1" must look like 1.0.0
  8 |   version: 2.1
    |            ^^^
`
		if !strings.HasPrefix(stderr, want) {
			t.Errorf("stderr does not start with the diagnostic and its snippet\n got:\n%s\nwant:\n%s", stderr, want)
		}
		if !strings.Contains(stdout, ": invalid: ") || !strings.Contains(stdout, "1 error") {
			t.Errorf("stdout summary %q; want it to say invalid, 1 error", stdout)
		}
	})
}
