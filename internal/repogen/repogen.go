// Package repogen generates large, valid fuelsync config repositories for benchmarks
// and scale tests.
//
// A generated repository has the repository layout:
//
//	plugins/gen-release/            the release, as a package_version 5.0.0 plugin
//	  metadata.yaml                 releases: [{is_release: true, base_release_path, graphs}]
//	  release.yaml                  roles, tags, volumes, components, attributes
//	  graphs/00-stages.yaml         stages, groups and hiera of the default graph
//	  graphs/NN-<area>.yaml         the other default-graph tasks, ~100 per file
//	  provision.yaml                the provision graph
//	plugins/ext-NN/                 Plugins-1 package_version 4.0.0 extension plugins
//	  metadata.yaml node_roles.yaml volumes.yaml components.yaml
//	  deployment_tasks.yaml environment_config.yaml
//	  deployment_scripts/ repositories/ubuntu/
//	clusters/c-NN.yaml              cluster specs; every fifth one (c-03, c-08, ...)
//	clusters/c-NN.hcl               is written in HCL instead
//
// The data looks like real Fuel data: puppet tasks with tags or roles selectors,
// requires/required_for, cross-depends, string and yaql conditions and
// puppet parameters; roles with tags, limits, conflicts and restrictions; components
// with compatible/requires; volumes per role. Every dependency points at an earlier
// task, so the graphs are acyclic, and every cluster is valid against the release and
// the plugins it enables.
//
// A second shape is built from real data (Mitaka, mitaka.go): the Fuel 9.x release
// and the four upstream plugins of examples/fuel-mitaka, with generated clusters
// whose nodes have several roles.
package repogen

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing/fstest"
)

// Spec sizes a generated repository.
type Spec struct {
	// Plugins is the number of plugin packages: one release plugin and Plugins-1
	// extension plugins (at least 1).
	Plugins int
	// Tasks is the number of deployment tasks over every graph of every plugin
	// (stages and groups included). It is raised to MinTasks when smaller.
	Tasks int
	// Nodes is the number of nodes over all clusters; each cluster has at least one.
	Nodes int
	// Clusters is the number of cluster spec files.
	Clusters int
	// Seed makes the generated data vary; the same Spec gives the same bytes.
	Seed int64
	// CrossDepends is the percentage of puppet tasks with cross-node dependencies
	// (0: 20). Above 20, a task has one to three cross-depends entries, some on
	// every node of a tag with policy any (a single node), as well as the
	// controllers.
	CrossDepends int
	// StageFanIn makes every puppet task required for two stages on sync
	// (deploy_end and post_deployment_start), so the stages of sync require each
	// (node, task) pair twice over.
	StageFanIn bool
	// Release is "" for a generated release and plugins, or MitakaRelease for
	// the real-data shape (Mitaka): the real Fuel 9.x release and the example
	// plugins, with Nodes nodes in Clusters clusters; Plugins, Tasks, Seed,
	// CrossDepends and StageFanIn do not apply to it.
	Release string
}

// Heavy is the shape of the cross-node measurements: 51 plugins, 5,000 tasks,
// nodes nodes in 4 clusters (some 500 nodes a cluster at 2,000), 60% of the
// tasks with cross-node dependencies and every task required for two stages.
// Its clusters are larger than Generate's usual ones, so a cluster's sync node
// requires hundreds of thousands of (node, task) pairs.
func Heavy(nodes int) Spec {
	return Spec{Plugins: 51, Tasks: 5000, Nodes: nodes, Clusters: 4, Seed: 1, CrossDepends: 60, StageFanIn: true}
}

// Names every generated repository uses.
const (
	ReleasePlugin  = "gen-release" // plugins/<dir> and name of the release plugin, = release_name
	ReleaseVersion = "gen-1.0"     // the release version clusters refer to
)

// release roles: name, tags (nil: no tags key), conflicts, limits, restriction.
type roleDef struct {
	name, label string
	tags        []string
	conflicts   []string
	limits      string // flow mapping, or ""
	restriction string // condition, or ""
}

var releaseRoles = []roleDef{
	{name: "controller", label: "Controller", tags: []string{"controller", "keystone", "database", "rabbitmq", "neutron"}, conflicts: []string{"compute"}, limits: "{min: 1, recommended: 3}"},
	{name: "compute", label: "Compute", tags: []string{"compute"}, conflicts: []string{"controller"}},
	{name: "ceph-osd", label: "Ceph OSD", tags: []string{"ceph-osd"}, restriction: "settings:storage.ceph_enabled.value == false"},
	{name: "cinder", label: "Cinder", tags: []string{"cinder"}, restriction: "settings:storage.enabled.value == false"},
	{name: "mongo", label: "Telemetry - MongoDB", tags: []string{"mongo"}, limits: "{max: 5}"},
	{name: "base-os", label: "Operating System", conflicts: []string{"controller", "compute"}},
	{name: "virt", label: "Virtual", tags: []string{"virt"}},
	{name: "ironic", label: "Ironic", tags: []string{"ironic"}, conflicts: []string{"compute"}},
}

// tags metadata of the release: name and has_primary.
var releaseTags = []struct {
	name    string
	primary bool
}{
	{"controller", true}, {"keystone", true}, {"database", true}, {"rabbitmq", true}, {"neutron", false},
	{"compute", false}, {"ceph-osd", false}, {"cinder", false}, {"mongo", true}, {"base-os", false},
	{"virt", false}, {"ironic", false},
}

// selector tags tasks choose from.
var selectorTags = []string{
	"primary-controller", "controller", "primary-keystone", "keystone", "primary-database", "database",
	"primary-rabbitmq", "rabbitmq", "neutron", "compute", "ceph-osd", "cinder", "primary-mongo", "mongo", "virt", "ironic",
}

// areas name the release graph files and the puppet modules of their tasks.
var areas = []string{
	"netconfig", "hiera", "globals", "firewall", "database", "rabbitmq", "keystone", "glance", "nova", "neutron",
	"cinder", "ceph", "heat", "horizon", "swift", "ceilometer", "aodh", "ironic", "murano", "sahara",
}

var stages = []string{"pre_deployment_start", "pre_deployment_end", "deploy_start", "deploy_end", "post_deployment_start", "post_deployment_end"}

var conditions = []string{
	"settings:common.debug.value == true",
	"settings:storage.ceph_enabled.value == true",
	"settings:storage.enabled.value == true and settings:common.debug.value == false",
	"not (settings:common.use_vcenter.value == true)",
	"cluster:mode == 'ha'",
}

var yaqlConditions = []string{
	"changed($.network_scheme) or changed($.roles)",
	"changedAny($.network_scheme, $.dpdk, $.get('use_ovs'))",
	"changed($.get('ceph', {}))",
}

// groups of the release default graph: one per role, plus primary-controller.
func groupNames() []string {
	g := []string{"primary-controller"}
	for _, r := range releaseRoles {
		g = append(g, r.name)
	}
	return g
}

// MinTasks is the smallest task count a repository of this shape has: the stages,
// groups and hiera task of the release, the two provision stages and one group per
// extension plugin.
func (s Spec) MinTasks() int {
	return len(stages) + len(groupNames()) + 1 + 2 + max(s.Plugins, 1) - 1
}

// normalized fills in the minimums.
func (s Spec) normalized() Spec {
	s.Plugins = max(s.Plugins, 1)
	s.Tasks = max(s.Tasks, s.MinTasks())
	s.Clusters = max(s.Clusters, 0)
	s.Nodes = max(s.Nodes, s.Clusters)
	return s
}

// PluginName is the name (and directory) of extension plugin i (1-based).
func PluginName(i int) string { return fmt.Sprintf("ext-%02d", i) }

// PluginRole is the role extension plugin i adds.
func PluginRole(i int) string { return PluginName(i) + "-node" }

// ClusterFile is the file of cluster i (1-based): HCL for every fifth cluster from
// the third on.
func ClusterFile(i int) string {
	if i%5 == 3 {
		return fmt.Sprintf("clusters/c-%02d.hcl", i)
	}
	return fmt.Sprintf("clusters/c-%02d.yaml", i)
}

type gen struct {
	s   Spec
	rnd *rand.Rand
	fs  fstest.MapFS
	// release default-graph task ids in order (dependencies point backwards).
	releaseTasks []string
}

// Generate builds the repository described by s. The same Spec always gives the
// same files and bytes.
func Generate(s Spec) fstest.MapFS {
	s = s.normalized()
	g := &gen{s: s, rnd: rand.New(rand.NewPCG(uint64(s.Seed), 0x6675656c73796e63)), fs: fstest.MapFS{}}
	g.dir("plugins")
	g.dir("clusters")
	if s.Release == MitakaRelease {
		g.mitaka()
		return g.fs
	}

	// Task budget: fixed tasks first, the rest split 58% release default graph,
	// 40% extension plugins, 2% provision graph.
	ext := s.Plugins - 1
	extra := s.Tasks - s.MinTasks()
	provExtra := extra / 50
	plugExtra := 0
	if ext > 0 {
		plugExtra = extra * 2 / 5
	}
	relExtra := extra - provExtra - plugExtra

	g.releasePlugin(relExtra, provExtra)
	for i := 1; i <= ext; i++ {
		n := 1 + plugExtra/ext
		if i <= plugExtra%ext {
			n++
		}
		g.extPlugin(i, n)
	}
	for i := 1; i <= s.Clusters; i++ {
		n := s.Nodes / s.Clusters
		if i <= s.Nodes%s.Clusters {
			n++
		}
		g.cluster(i, n)
	}
	return g.fs
}

func (g *gen) dir(name string) {
	g.fs[name] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
}

func (g *gen) file(name string, b *bytes.Buffer) {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if _, ok := g.fs[d]; !ok {
			g.dir(d)
		}
	}
	g.fs[name] = &fstest.MapFile{Data: slices.Clone(b.Bytes()), Mode: 0o644}
}

// ---------------------------------------------------------------- YAML helpers

var plainSafe = regexp.MustCompile(`^[A-Za-z0-9_/.^+-][A-Za-z0-9_/.^+:-]*$`)

// q renders a scalar for YAML, quoting when a plain scalar would change meaning.
func q(s string) string {
	switch strings.ToLower(s) {
	case "", "true", "false", "yes", "no", "on", "off", "null", "y", "n", "~":
		return "'" + s + "'"
	}
	if !plainSafe.MatchString(s) || (s[0] >= '0' && s[0] <= '9') || strings.HasPrefix(s, "-") {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return s
}

// flow renders a flow list.
func flow(items []string) string {
	qs := make([]string, len(items))
	for i, it := range items {
		qs[i] = q(it)
	}
	return "[" + strings.Join(qs, ", ") + "]"
}

// hclList renders an HCL tuple of strings.
func hclList(items []string) string {
	qs := make([]string, len(items))
	for i, it := range items {
		qs[i] = fmt.Sprintf("%q", it)
	}
	return "[" + strings.Join(qs, ", ") + "]"
}

// pick returns n distinct items of from, in from's order.
func (g *gen) pick(from []string, n int) []string {
	n = min(n, len(from))
	idx := make([]int, 0, n)
	for len(idx) < n {
		if j := g.rnd.IntN(len(from)); !slices.Contains(idx, j) {
			idx = append(idx, j)
		}
	}
	slices.Sort(idx)
	out := make([]string, n)
	for i, j := range idx {
		out[i] = from[j]
	}
	return out
}

// earlier returns up to n distinct ids chosen among the last window ids of ids.
func (g *gen) earlier(ids []string, n, window int) []string {
	if len(ids) == 0 {
		return nil
	}
	lo := max(0, len(ids)-window)
	return g.pick(ids[lo:], n)
}

// ---------------------------------------------------------------- tasks

type task struct {
	id, typ, version string
	selKey           string // tags | roles | role | groups
	sel              []string
	selStar          bool // roles: '*'
	requires         []string
	requiredFor      []string
	cross            []crossDep
	condition        string
	yaql             string
	tasks            []string // group members
	params           []string // preformatted "key: value" lines under parameters
	extra            []string // preformatted top-level "key: value" lines
}

type crossDep struct {
	name, selKey string
	sel          []string
	policy       string
}

func (t *task) write(b *bytes.Buffer) {
	fmt.Fprintf(b, "- id: %s\n  type: %s\n  version: %s\n", t.id, t.typ, t.version)
	switch {
	case t.selStar:
		fmt.Fprintf(b, "  %s: '*'\n", t.selKey)
	case len(t.sel) > 0:
		fmt.Fprintf(b, "  %s: %s\n", t.selKey, flow(t.sel))
	}
	if len(t.requires) > 0 {
		fmt.Fprintf(b, "  requires: %s\n", flow(t.requires))
	}
	if len(t.requiredFor) > 0 {
		fmt.Fprintf(b, "  required_for: %s\n", flow(t.requiredFor))
	}
	if len(t.cross) > 0 {
		b.WriteString("  cross-depends:\n")
		for _, c := range t.cross {
			fmt.Fprintf(b, "    - name: %s\n      %s: %s\n", c.name, c.selKey, flow(c.sel))
			if c.policy != "" {
				fmt.Fprintf(b, "      policy: %s\n", c.policy)
			}
		}
	}
	if t.condition != "" {
		fmt.Fprintf(b, "  condition: %s\n", q(t.condition))
	}
	if t.yaql != "" {
		fmt.Fprintf(b, "  condition:\n    yaql_exp: %s\n", q(t.yaql))
	}
	if len(t.tasks) > 0 {
		fmt.Fprintf(b, "  tasks: %s\n", flow(t.tasks))
	}
	for _, l := range t.extra {
		fmt.Fprintf(b, "  %s\n", l)
	}
	if len(t.params) > 0 {
		b.WriteString("  parameters:\n")
		for _, l := range t.params {
			fmt.Fprintf(b, "    %s\n", l)
		}
	}
	b.WriteString("\n")
}

var timeouts = []int{120, 180, 300, 600, 1200, 1800, 3600}

// puppetTask makes a realistic task of the default graph. prior are the task ids
// it may depend on (all defined earlier in the graph); selectors are the tags it may
// run on.
func (g *gen) puppetTask(id, module string, prior []string, selectors []string, manifestDir, modules string) *task {
	t := &task{id: id, typ: "puppet", version: "2.1.0", selKey: "tags"}
	r := g.rnd.IntN(100)
	switch {
	case r < 5:
		t.selKey, t.selStar = "roles", true
	case r < 20:
		t.selKey, t.sel = "roles", g.pick(selectors, 1+g.rnd.IntN(2))
	case r < 25:
		t.sel = []string{"/^primary-.+/"}
	default:
		t.sel = g.pick(selectors, 1+g.rnd.IntN(3))
	}
	t.requires = g.earlier(prior, 1+g.rnd.IntN(2), 40)
	if len(t.requires) == 0 {
		t.requires = []string{"deploy_start"}
	}
	t.requiredFor = []string{"deploy_end"}
	if g.s.StageFanIn {
		t.requiredFor = append(t.requiredFor, "post_deployment_start")
	}
	crossPercent := 20
	if g.s.CrossDepends > 0 {
		crossPercent = g.s.CrossDepends
	}
	if g.rnd.IntN(100) < crossPercent && len(prior) > 0 {
		c := crossDep{name: g.earlier(prior, 1, 200)[0], selKey: "tags", sel: []string{"primary-controller"}}
		switch g.rnd.IntN(3) {
		case 0:
			c.selKey, c.sel = "role", []string{"primary-database"}
		case 1:
			c.sel, c.policy = []string{"controller", "primary-controller"}, "any"
		}
		t.cross = append(t.cross, c)
		if crossPercent > 20 {
			for range g.rnd.IntN(3) {
				t.cross = append(t.cross, g.heavyCross(prior))
			}
		}
	}
	switch r := g.rnd.IntN(100); {
	case r < 12:
		t.condition = conditions[g.rnd.IntN(len(conditions))]
	case r < 17:
		t.yaql = yaqlConditions[g.rnd.IntN(len(yaqlConditions))]
	}
	if g.rnd.IntN(100) < 10 {
		t.extra = append(t.extra, "reexecute_on: [deploy_changes]")
	}
	if g.rnd.IntN(100) < 10 {
		t.typ = "shell"
		t.params = []string{
			fmt.Sprintf("cmd: %s", q(fmt.Sprintf("ruby %s/%s/%s.rb", manifestDir, module, id))),
			fmt.Sprintf("timeout: %d", timeouts[g.rnd.IntN(len(timeouts))]),
		}
		return t
	}
	t.params = []string{
		fmt.Sprintf("puppet_manifest: %s/%s/%s.pp", manifestDir, module, id),
		"puppet_modules: " + modules,
		fmt.Sprintf("timeout: %d", timeouts[g.rnd.IntN(len(timeouts))]),
	}
	if g.rnd.IntN(100) < 15 {
		t.params = append(t.params, "retries: 3")
	}
	return t
}

// heavyCross is one more cross-depends entry of the heavy shape: on the
// controllers (every one), or on one node of a large tag (policy any).
func (g *gen) heavyCross(prior []string) crossDep {
	c := crossDep{name: g.earlier(prior, 1, 400)[0], selKey: "tags"}
	switch g.rnd.IntN(4) {
	case 0:
		c.sel = []string{"controller"}
	case 1:
		c.sel, c.policy = []string{"compute"}, "any"
	case 2:
		c.sel, c.policy = []string{"ceph-osd", "cinder"}, "any"
	default:
		c.selKey, c.sel = "role", []string{"primary-controller", "controller"}
	}
	return c
}

// ---------------------------------------------------------------- release plugin

// releasePlugin writes the release plugin: its metadata, release data, the
// default graph (stages and groups, then relExtra tasks) and the provision graph
// (provExtra tasks besides its stages).
func (g *gen) releasePlugin(relExtra, provExtra int) {
	dir := "plugins/" + ReleasePlugin
	var b bytes.Buffer
	fmt.Fprintf(&b, `# The release of this generated repository, packaged as a plugin.
name: %[1]s
title: Generated release
version: '1.0.0'
package_version: '5.0.0'
description: A generated release for benchmarks and scale tests.
licenses: ['Apache License Version 2.0']
authors: ['fuelsync repogen']
homepage: 'https://example.org/fuelsync/%[1]s'
groups: []

releases:
  - is_release: true
    release_name: %[1]s
    description: Generated OpenStack-like release on Ubuntu.
    operating_system: Ubuntu
    version: %[2]s
    base_release_path: release.yaml
    graphs:
      - type: default
        tasks_path: graphs/*.yaml
      - type: provision
        tasks_path: provision.yaml
`, ReleasePlugin, ReleaseVersion)
	g.file(dir+"/metadata.yaml", &b)

	b.Reset()
	g.releaseData(&b)
	g.file(dir+"/release.yaml", &b)
	g.releaseStages(dir)
	g.releaseGraphs(dir, relExtra)
	g.provisionGraph(dir, provExtra)
}

// releaseStages writes graphs/00-stages.yaml: the stages, the groups and hiera.
func (g *gen) releaseStages(dir string) {
	var b bytes.Buffer
	b.WriteString("# Stages and node groups of the default graph.\n")
	for i, st := range stages {
		fmt.Fprintf(&b, "- {id: %s, type: stage, version: 2.1.0", st)
		if i > 0 {
			fmt.Fprintf(&b, ", requires: [%s]", stages[i-1])
		}
		b.WriteString("}\n")
	}
	b.WriteString("\n")
	prevGroup := ""
	for _, grp := range groupNames() {
		t := &task{id: grp, typ: "group", version: "2.1.0", selKey: "roles", sel: []string{grp}, requiredFor: []string{"deploy_end"}}
		switch {
		case prevGroup == "":
			t.requires = []string{"deploy_start"}
			t.extra = []string{"fault_tolerance: 0"}
			t.params = []string{"strategy: {type: one_by_one}"}
		case grp == "controller":
			t.requires = []string{"primary-controller"}
			t.extra = []string{"fault_tolerance: 1"}
			t.params = []string{"strategy: {type: parallel, amount: 6}"}
		default:
			t.requires = []string{"controller"}
			t.extra = []string{"fault_tolerance: '2%'"}
			t.params = []string{"strategy: {type: parallel}"}
		}
		t.write(&b)
		prevGroup = grp
	}
	hiera := &task{id: "hiera", typ: "puppet", version: "2.1.0", selKey: "roles", selStar: true,
		requires: []string{"deploy_start"}, requiredFor: []string{"deploy_end"},
		params: []string{"puppet_manifest: /etc/puppet/modules/osnailyfacter/modular/hiera/hiera.pp", "puppet_modules: /etc/puppet/modules", "timeout: 120"}}
	hiera.write(&b)
	g.file(dir+"/graphs/00-stages.yaml", &b)
	g.releaseTasks = []string{"hiera"}
}

// releaseGraphs writes the other relExtra tasks of the default graph, about 100
// a file.
func (g *gen) releaseGraphs(dir string, relExtra int) {
	var b bytes.Buffer
	files := (relExtra + 99) / 100
	for f := 0; f < files; f++ {
		n := relExtra / files
		if f < relExtra%files {
			n++
		}
		area := areas[f%len(areas)]
		b.Reset()
		fmt.Fprintf(&b, "# Tasks of the %s area.\n", area)
		for k := 0; k < n; k++ {
			id := fmt.Sprintf("%s-%04d", area, len(g.releaseTasks))
			g.puppetTask(id, area, g.releaseTasks, selectorTags, "/etc/puppet/modules/openstack_tasks/examples", "/etc/puppet/modules").write(&b)
			g.releaseTasks = append(g.releaseTasks, id)
		}
		g.file(fmt.Sprintf("%s/graphs/%02d-%s.yaml", dir, f+1, area), &b)
	}
}

// provisionGraph writes provision.yaml: its two stages and provExtra tasks.
func (g *gen) provisionGraph(dir string, provExtra int) {
	var b bytes.Buffer
	b.WriteString("# The provision graph.\n- {id: provision_start, type: stage, version: 2.1.0}\n- {id: provision_end, type: stage, version: 2.1.0, requires: [provision_start]}\n\n")
	prev := "provision_start"
	for k := 0; k < provExtra; k++ {
		id := fmt.Sprintf("provision-%04d", k+1)
		t := &task{id: id, typ: "shell", version: "2.1.0", selKey: "roles", selStar: true,
			requires: []string{prev}, requiredFor: []string{"provision_end"},
			params: []string{fmt.Sprintf("cmd: %s", q(fmt.Sprintf("/usr/bin/provision --step %d --config /etc/provision.yaml", k+1))), fmt.Sprintf("timeout: %d", timeouts[g.rnd.IntN(len(timeouts))])}}
		if k%4 == 3 {
			t.typ = "upload_file"
			t.params = []string{fmt.Sprintf("path: /etc/provision/step-%d.yaml", k+1), "data: {yaql_exp: '$.provision.to_yaml()'}"}
		}
		t.write(&b)
		prev = id
	}
	g.file(dir+"/provision.yaml", &b)
}

// releaseData writes release.yaml: roles, tags, volumes, components and
// attributes, in the nailgun fixture's spelling.
func (g *gen) releaseData(b *bytes.Buffer) {
	b.WriteString("# Release data, in the nailgun fixture spelling.\nmodes: [ha_compact]\n\nroles_metadata:\n")
	for i, r := range releaseRoles {
		fmt.Fprintf(b, "  %s:\n    name: %s\n    description: The %s role of the generated release.\n    weight: %d\n", r.name, q(r.label), r.label, (i+1)*10)
		if r.tags != nil {
			fmt.Fprintf(b, "    tags: %s\n", flow(r.tags))
		}
		if len(r.conflicts) > 0 {
			fmt.Fprintf(b, "    conflicts: %s\n", flow(r.conflicts))
		}
		if r.limits != "" {
			fmt.Fprintf(b, "    limits: %s\n", r.limits)
		}
		if r.restriction != "" {
			fmt.Fprintf(b, "    restrictions:\n      - condition: %s\n        message: Enable it in the environment settings first.\n", q(r.restriction))
		}
		b.WriteString("    update_required: [controller]\n    public_ip_required: false\n")
	}
	b.WriteString("\ntags_metadata:\n")
	for _, t := range releaseTags {
		fmt.Fprintf(b, "  %s: {has_primary: %t}\n", t.name, t.primary)
	}
	releaseVolumes(b)
	b.WriteString(releaseComponents)
}

// releaseVolumes writes the release's volumes_metadata.
func releaseVolumes(b *bytes.Buffer) {
	b.WriteString(`
volumes_metadata:
  volumes:
    - {id: os, type: vg, min_size: 10240, label: Base System}
    - {id: vm, type: vg, min_size: 5120, label: Virtual Storage}
    - {id: cinder, type: vg, min_size: 0, label: Cinder}
    - {id: ceph, type: partition, min_size: 0, label: Ceph}
    - {id: mongo, type: vg, min_size: 10240, label: MongoDB}
  volumes_roles_mapping:
`)
	vols := map[string][]string{
		"controller": {"os:min"}, "compute": {"os:min", "vm:all"}, "ceph-osd": {"os:min", "ceph:all"},
		"cinder": {"os:min", "cinder:all"}, "mongo": {"os:min", "mongo:all"},
		"base-os": {"os:all"}, "virt": {"os:min", "vm:all"}, "ironic": {"os:min"},
	}
	for _, r := range releaseRoles {
		fmt.Fprintf(b, "    %s:\n", r.name)
		for _, v := range vols[r.name] {
			id, size, _ := strings.Cut(v, ":")
			fmt.Fprintf(b, "      - {id: %s, allocate_size: %s}\n", id, size)
		}
	}
}

// releaseComponents is the end of release.yaml: its components, the component
// types a cluster needs and its attributes.
const releaseComponents = `
components_metadata:
  - name: hypervisor:qemu
    label: QEMU/KVM
    description: Virtual machines with libvirt and QEMU/KVM.
    weight: 5
    compatible:
      - name: network:neutron:core:ml2
      - name: storage:block:*
  - name: network:neutron:core:ml2
    label: Neutron ML2
    description: The Neutron ML2 core plugin.
    weight: 10
    compatible:
      - name: network:neutron:ml2:*
  - name: network:neutron:ml2:vlan
    label: Neutron with VLAN segmentation
    description: Tenant networks are VLANs.
    weight: 15
    requires:
      - name: network:neutron:core:ml2
  - name: network:neutron:ml2:tun
    label: Neutron with tunneling segmentation
    description: Tenant networks are VXLAN tunnels.
    weight: 20
    requires:
      - name: network:neutron:core:ml2
    incompatible:
      - name: network:neutron:ml2:vlan
        message: Choose one segmentation type.
  - name: storage:block:lvm
    label: LVM block storage
    description: Cinder volumes on LVM.
    weight: 25
    bind:
      - "settings:storage.enabled.value"
    compatible:
      - name: hypervisor:qemu
  - name: storage:block:ceph
    label: Ceph RBD block storage
    description: Cinder volumes on Ceph.
    weight: 30
    bind:
      - "settings:storage.ceph_enabled.value"

required_component_types: [hypervisor, network, storage]

attributes_metadata:
  editable:
    common:
      metadata: {label: Common, weight: 10}
      debug: {value: false, type: checkbox, label: Debug logging, weight: 10}
      use_vcenter: {value: false, type: hidden, label: vCenter, weight: 20}
      puppet_debug: {value: true, type: checkbox, label: Puppet debug, weight: 30}
    storage:
      metadata: {label: Storage, weight: 20}
      enabled: {value: false, type: checkbox, label: Enable LVM block storage, weight: 10}
      ceph_enabled: {value: false, type: checkbox, label: Enable Ceph, weight: 20}
      osd_pool_size: {value: '3', type: text, label: Ceph object replication factor, weight: 30, regex: {source: '^[1-9]\d*$', error: Invalid number}}
    access:
      metadata: {label: Access, weight: 30}
      user: {value: admin, type: text, label: Username, weight: 10}
      password: {value: admin, type: password, label: Password, weight: 20}
      tenant: {value: admin, type: text, label: Tenant, weight: 30}
`

// ---------------------------------------------------------------- extension plugins

// extPlugin writes extension plugin i (1-based) with ntasks deployment tasks.
func (g *gen) extPlugin(i, ntasks int) {
	name, role := PluginName(i), PluginRole(i)
	dir := "plugins/" + name
	var b bytes.Buffer
	groups := []string{"monitoring", "network", "storage", "equipment", "hypervisor"}
	fmt.Fprintf(&b, `# Generated extension plugin %[1]d.
name: %[2]s
title: Generated plugin %[1]d
version: '%[3]d.0.%[4]d'
package_version: '4.0.0'
description: Adds the %[5]s role, a volume, settings, a component and %[6]d deployment tasks.
fuel_version: ['9.0']
licenses: ['Apache License Version 2.0']
authors: ['fuelsync repogen']
homepage: 'https://example.org/fuelsync/%[2]s'
groups: [%[7]s]
is_hotpluggable: false

releases:
  - os: ubuntu
    version: %[8]s
    mode: [ha]
    deployment_scripts_path: deployment_scripts/
    repository_path: repositories/ubuntu
`, i, name, 1+i%3, i%10, role, ntasks, groups[i%len(groups)], ReleaseVersion)
	g.file(dir+"/metadata.yaml", &b)
	g.dir(dir + "/deployment_scripts")
	g.dir(dir + "/repositories")
	g.dir(dir + "/repositories/ubuntu")

	g.extData(i, dir)
	g.extTasks(i, dir, ntasks)
}

// extData writes the role, volume, component and settings files of extension
// plugin i.
func (g *gen) extData(i int, dir string) {
	name, role := PluginName(i), PluginRole(i)
	var b bytes.Buffer
	fmt.Fprintf(&b, `%s:
  name: 'Generated role %d'
  description: Runs the services of plugin %s.
  has_primary: %t
  public_ip_required: false
  weight: %d
  limits:
    max: 10
`, role, i, name, i%2 == 0, 100+i)
	g.file(dir+"/node_roles.yaml", &b)

	b.Reset()
	fmt.Fprintf(&b, `volumes:
  - id: %[1]s-data
    type: vg
    min_size: %[2]d
    label: Data of %[1]s
    items:
      - {mount: /var/lib/%[1]s, type: lv, name: data, size: %[2]d, file_system: ext4}
volumes_roles_mapping:
  %[3]s:
    - {id: os, allocate_size: min}
    - {id: %[1]s-data, allocate_size: all}
`, name, 1024*(1+i%8), role)
	g.file(dir+"/volumes.yaml", &b)

	b.Reset()
	fmt.Fprintf(&b, `- name: additional_service:%[1]s
  label: Generated service %[2]d
  description: The service of plugin %[1]s.
  weight: %[3]d
  requires:
    - name: network:neutron:core:ml2
  compatible:
    - name: hypervisor:qemu
    - name: network:neutron:ml2:*
`, name, i, 100+i)
	g.file(dir+"/components.yaml", &b)

	b.Reset()
	fmt.Fprintf(&b, `attributes:
  metadata:
    label: Generated plugin %[1]d
    weight: %[2]d
    group: other
  endpoint:
    value: '192.0.2.%[3]d'
    label: Service endpoint
    type: text
    weight: 10
    regex:
      source: '^(?:\d{1,3}\.){3}\d{1,3}$'
      error: Invalid IP address
  retention_days:
    value: '30'
    label: Keep data for (days)
    type: text
    weight: 20
  enable_tls:
    value: false
    label: Use TLS
    type: checkbox
    weight: 30
    restrictions:
      - condition: "settings:%[4]s.endpoint.value == ''"
        action: disable
  admin_password:
    value: 'generated-%[1]d'
    label: Admin password
    type: password
    weight: 40
`, i, 50+i, i%250+1, name)
	g.file(dir+"/environment_config.yaml", &b)

}

// extTasks writes deployment_tasks.yaml of extension plugin i: the role's group,
// then ntasks-1 tasks on it and on release tags.
func (g *gen) extTasks(i int, dir string, ntasks int) {
	name, role := PluginName(i), PluginRole(i)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Tasks of %s; they join the release's default graph.\n", name)
	grp := &task{id: role, typ: "group", version: "2.1.0", selKey: "roles", sel: []string{role},
		requires: []string{"controller"}, requiredFor: []string{"deploy_end"}, tasks: []string{"hiera"},
		params: []string{"strategy: {type: parallel}"}}
	grp.write(&b)
	selectors := []string{role, "primary-controller", "controller", "compute"}
	var own []string
	for k := 1; k < ntasks; k++ {
		id := fmt.Sprintf("%s-%s-%03d", name, areas[k%len(areas)], k)
		// Depend on the plugin's own earlier tasks and on release tasks.
		prior := append(slices.Clip(g.earlier(g.releaseTasks, 4, len(g.releaseTasks))), own...)
		t := g.puppetTask(id, "manifests", prior, selectors, "puppet", "puppet/modules:/etc/puppet/modules")
		t.write(&b)
		own = append(own, id)
	}
	g.file(dir+"/deployment_tasks.yaml", &b)
}

// ---------------------------------------------------------------- clusters

type node struct {
	name   string
	id     int
	roles  []string
	assign []string
}

var computePattern = [][]string{{"compute"}, {"compute", "ceph-osd"}, {"compute"}, {"cinder"}, {"ceph-osd"}, {"compute", "cinder"}, {"compute"}, {"mongo"}}

// clusterSpec is what a generated cluster file says.
type clusterSpec struct {
	i                   int
	name                string
	plugins, components []string
	pluginIdx           []int // the plugins' numbers
	storage             string
	settings            [][2]string // dotted path, YAML value
	nodes               []node
}

// cluster writes cluster i (1-based) with nnodes nodes, in YAML or HCL
// (ClusterFile).
func (g *gen) cluster(i, nnodes int) {
	c := g.clusterChoices(i)
	c.nodes = g.clusterNodes(c, nnodes)
	var b bytes.Buffer
	file := ClusterFile(i)
	if strings.HasSuffix(file, ".hcl") {
		c.writeHCL(&b)
	} else {
		c.writeYAML(&b)
	}
	g.file(file, &b)
}

// clusterChoices chooses cluster i's plugins (three, in turn), storage,
// segmentation, components and settings.
func (g *gen) clusterChoices(i int) *clusterSpec {
	name := fmt.Sprintf("c-%02d", i)
	ext := g.s.Plugins - 1
	var plugins []string
	var pluginIdx []int
	for j := 0; j < min(3, ext); j++ {
		k := (i*3+j)%ext + 1
		if !slices.Contains(pluginIdx, k) {
			pluginIdx = append(pluginIdx, k)
			plugins = append(plugins, PluginName(k))
		}
	}
	storage := "storage:block:lvm"
	if i%2 == 0 {
		storage = "storage:block:ceph"
	}
	segmentation := "network:neutron:ml2:vlan"
	if i%3 == 0 {
		segmentation = "network:neutron:ml2:tun"
	}
	components := []string{"hypervisor:qemu", "network:neutron:core:ml2", segmentation, storage}
	for _, p := range plugins {
		components = append(components, "additional_service:"+p)
	}
	settings := [][2]string{{"common.debug.value", fmt.Sprint(i%2 == 0)}}
	if storage == "storage:block:ceph" {
		settings = append(settings, [2]string{"storage.osd_pool_size.value", "'2'"})
	}
	for _, p := range plugins {
		settings = append(settings, [2]string{p + ".retention_days.value", fmt.Sprintf("'%d'", 7+g.rnd.IntN(90))})
	}
	return &clusterSpec{i: i, name: name, plugins: plugins, pluginIdx: pluginIdx, storage: storage, components: components, settings: settings}
}

// clusterNodes gives the cluster's nodes their roles: three controllers, one
// node of each plugin's role, then computes, storage and a few mongo nodes.
func (g *gen) clusterNodes(c *clusterSpec, nnodes int) []node {
	nodes := make([]node, nnodes)
	mongos := 0
	for k := range nodes {
		n := node{name: fmt.Sprintf("node-%d", k+1), id: k + 1}
		switch {
		case k < 3:
			n.roles = []string{"controller"}
		case k-3 < len(c.plugins):
			n.roles = []string{PluginRole(c.pluginIdx[k-3])}
		default:
			n.roles = computePattern[g.rnd.IntN(len(computePattern))]
			if c.storage == "storage:block:lvm" && slices.Contains(n.roles, "ceph-osd") {
				n.roles = []string{"compute", "cinder"}
			}
			if c.storage == "storage:block:ceph" && slices.Contains(n.roles, "cinder") {
				n.roles = []string{"compute", "ceph-osd"}
			}
			if slices.Contains(n.roles, "mongo") {
				if mongos == 3 { // the role's limit is 5
					n.roles = []string{"compute"}
				} else {
					mongos++
				}
			}
		}
		if g.rnd.IntN(20) == 0 {
			n.assign = []string{"backup"}
		}
		nodes[k] = n
	}
	return nodes
}

// writeHCL writes the cluster in HCL.
func (c *clusterSpec) writeHCL(b *bytes.Buffer) {
	fmt.Fprintf(b, "# Generated cluster %d (HCL).\n\nlocals {\n  controller = [\"controller\"]\n}\n\n", c.i)
	fmt.Fprintf(b, "cluster %q {\n  release = %q\n  mode    = \"ha\"\n  plugins = %s\n\n  components = [\n", c.name, ReleaseVersion, hclList(c.plugins))
	for _, comp := range c.components {
		fmt.Fprintf(b, "    %q,\n", comp)
	}
	b.WriteString("  ]\n\n  settings = {\n")
	width := 0
	for _, s := range c.settings {
		width = max(width, len(s[0])+2)
	}
	for _, s := range c.settings {
		v := s[1]
		if strings.HasPrefix(v, "'") {
			v = `"` + strings.Trim(v, "'") + `"`
		}
		fmt.Fprintf(b, "    %-*s = %s\n", width, fmt.Sprintf("%q", s[0]), v)
	}
	b.WriteString("  }\n\n  tags = {\n    backup = { has_primary = false }\n  }\n")
	for _, n := range c.nodes {
		roles := hclList(n.roles)
		if len(n.roles) == 1 && n.roles[0] == "controller" {
			roles = "local.controller"
		}
		fmt.Fprintf(b, "\n  node %q {\n    id    = %d\n    roles = %s\n", n.name, n.id, roles)
		if len(n.assign) > 0 {
			fmt.Fprintf(b, "    tags {\n      assign = %s\n    }\n", hclList(n.assign))
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
}

// writeYAML writes the cluster in YAML.
func (c *clusterSpec) writeYAML(b *bytes.Buffer) {
	fmt.Fprintf(b, "# Generated cluster %d.\ncluster: %s\nrelease: %s\nmode: ha\nplugins: %s\n\ncomponents:\n", c.i, c.name, ReleaseVersion, flow(c.plugins))
	for _, comp := range c.components {
		fmt.Fprintf(b, "  - %s\n", comp)
	}
	b.WriteString("\nsettings:\n")
	for _, s := range c.settings {
		fmt.Fprintf(b, "  %s: %s\n", s[0], s[1])
	}
	b.WriteString("\ntags:\n  backup: {has_primary: false}\n\nnodes:\n")
	for _, n := range c.nodes {
		fmt.Fprintf(b, "  %s:\n    id: %d\n    roles: %s\n", n.name, n.id, flow(n.roles))
		if len(n.assign) > 0 {
			fmt.Fprintf(b, "    tags: {assign: %s}\n", flow(n.assign))
		}
	}
}

// ---------------------------------------------------------------- disk

// WriteDir writes a generated repository under dir (created if needed): directories
// with mode 0755, files with their MapFile mode (0644 when unset).
func WriteDir(fsys fstest.MapFS, dir string) error {
	names := make([]string, 0, len(fsys))
	for name := range fsys {
		names = append(names, name)
	}
	slices.Sort(names)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range names {
		if !fs.ValidPath(name) || name == "." {
			return fmt.Errorf("repogen: invalid path %q", name)
		}
		f := fsys[name]
		full := filepath.Join(dir, filepath.FromSlash(name))
		if f.Mode.IsDir() {
			if err := os.MkdirAll(full, 0o755); err != nil {
				return err
			}
			continue
		}
		if !f.Mode.IsRegular() {
			return fmt.Errorf("repogen: %s: unsupported file mode %s", name, f.Mode)
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		perm := f.Mode.Perm()
		if perm == 0 {
			perm = 0o644
		}
		if err := os.WriteFile(full, f.Data, perm); err != nil {
			return err
		}
	}
	return nil
}
