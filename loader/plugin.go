package loader

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
)

// SupportedPackageVersions are the plugin package formats fuelsync reads.
var SupportedPackageVersions = []string{"3.0.0", "4.0.0", "5.0.0", "6.0.0"}

// metadataFiles are the names a plugin's metadata may have, in order of preference.
var metadataFiles = []string{"metadata.yaml", "metadata.yml", "metadata.json", "plugin.hcl"}

// fixedFile is a file loaded from a plugin directory when present.
type fixedFile struct {
	name  string
	since string // first package_version that reads it
}

var fixedFiles = []fixedFile{
	{"environment_config.yaml", "3.0.0"},
	{"tasks.yaml", "3.0.0"},
	{"deployment_tasks.yaml", "3.0.0"},
	{"node_roles.yaml", "3.0.0"},
	{"volumes.yaml", "3.0.0"},
	{"network_roles.yaml", "3.0.0"},
	{"components.yaml", "4.0.0"},
	{"node_tags.yaml", "6.0.0"},
}

var (
	rePluginName    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_-]+$`) })
	reRoleName      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-zA-Z_-]+$`) })
	reComponentName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(hypervisor|network|storage|additional_service):([0-9a-z_-]+:)*[0-9a-z_-]+$`)
	})
	reComponentRef = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(hypervisor|network|storage|additional_service)(:([0-9a-z_-]+|\*))*:?\*?$`)
	})
	// The per-task checks run thousands of times a load; plain byte loops are
	// several times faster than the equivalent regular expressions.
	reTaskID       = nameSet{star: true}              // ^[0-9a-zA-Z_-]+$|^\*$
	reSelectorName = nameSet{extra: ":.", star: true} // ^[0-9a-zA-Z_:.-]+$|^\*$
	reDepName      = nameSet{extra: ":."}             // ^[0-9a-zA-Z_:.-]+$
)

// matcher is what the name checks need of a rule: a compiled regexp or a nameSet.
type matcher interface{ MatchString(string) bool }

// nameSet matches non-empty strings of ASCII letters, digits, '_', '-' and the
// bytes in extra; with star, also the string "*".
type nameSet struct {
	extra string
	star  bool
}

// MatchString reports whether s is such a name.
func (n nameSet) MatchString(s string) bool {
	if s == "" {
		return false
	}
	if n.star && s == "*" {
		return true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || strings.IndexByte(n.extra, c) >= 0) {
			return false
		}
	}
	return true
}

// isVersion reports whether s is three dot-separated numbers (^\d+\.\d+\.\d+$).
func isVersion(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// regexErrors caches whether each /regex/ of the data compiles: the same
// selectors recur in thousands of tasks.
var regexErrors sync.Map // string → error (nil when it compiles)

func compileError(expr string) error {
	if e, ok := regexErrors.Load(expr); ok {
		err, _ := e.(error)
		return err
	}
	_, err := regexp.Compile(expr)
	regexErrors.Store(expr, err)
	return err
}

const (
	rulePluginName    = "plugin names may contain only lowercase letters, digits, '_' and '-' (^[a-z0-9_-]+$)"
	ruleRoleName      = "role names may contain only letters, digits, '_' and '-' (^[0-9a-zA-Z_-]+$)"
	ruleComponentName = "component names are <type>:<name>[:<name>...] with type hypervisor, network, storage or additional_service and names of [0-9a-z_-]"
	ruleTaskID        = "task ids may contain only letters, digits, '_' and '-' (^[0-9a-zA-Z_-]+$)"
)

// requiredMetadata lists the metadata fields fuel-plugin-builder requires, by
// package_version. 5.0.0 and later deprecate fuel_version, so it is not required there.
func requiredMetadata(pv string) []string {
	base := []string{"name", "title", "version", "package_version", "description", "licenses", "authors", "homepage", "releases", "groups"}
	switch pv {
	case "3.0.0":
		return append(base, "fuel_version")
	case "4.0.0":
		return append(base, "fuel_version", "is_hotpluggable")
	}
	return base
}

var pluginGroups = map[string]bool{"network": true, "storage": true, "storage::cinder": true, "storage::glance": true, "hypervisor": true, "monitoring": true, "equipment": true}

// versionAtLeast compares dotted versions numerically (missing parts are 0).
func versionAtLeast(v, min string) bool {
	a, b := strings.Split(v, "."), strings.Split(min, ".")
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = atoiPrefix(a[i])
		}
		if i < len(b) {
			y = atoiPrefix(b[i])
		}
		if x != y {
			return x > y
		}
	}
	return true
}

func atoiPrefix(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// pluginDoc is a plugin package before validation: metadata plus the fixed files,
// however they were written (YAML files or one plugin.hcl).
type pluginDoc struct {
	metaFile string
	meta     *Value
	// files maps a fixed-file name to its data; present means the file exists.
	files map[string]*Value
	// fileNames maps a fixed-file name to the file its data came from.
	fileNames map[string]string
}

// loadPlugin reads and validates the plugin package in dir.
func (l *loadCtx) loadPlugin(dir string) (*Plugin, hcl.Diagnostics) {
	// One listing of the directory instead of a stat per candidate file: a load
	// looks for 4 metadata names and 8 fixed files in every plugin. A listed entry
	// is read later through readFile, which refuses links that leave the repository.
	present, diags := l.dirNames(dir)
	var found []string
	for _, n := range metadataFiles {
		if present[n] {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return nil, hcl.Diagnostics{withDetail(errorAt(fileRange(dir), "plugin directory %s has no metadata.yaml", dir),
			"Every directory under plugins/ is a plugin package: it needs metadata.yaml (or metadata.yml, metadata.json, plugin.hcl).")}
	}
	metaFile := path.Join(dir, found[0])
	if len(found) > 1 {
		diags = append(diags, warnAt(fileRange(path.Join(dir, found[1])), "plugin %s has both %s and %s; %s is used", dir, found[0], found[1], found[0]))
	}
	var doc *pluginDoc
	var d hcl.Diagnostics
	if strings.HasSuffix(metaFile, ".hcl") {
		doc, d = l.pluginFromHCL(metaFile)
	} else {
		doc, d = l.pluginFromYAML(dir, metaFile, present)
	}
	diags = append(diags, d...)
	if doc == nil {
		return nil, diags
	}
	p, d := l.buildPlugin(dir, doc)
	return p, append(diags, d...)
}

// dirNames lists the names in a directory of the repository.
func (l *loadCtx) dirNames(dir string) (map[string]bool, hcl.Diagnostics) {
	entries, diags := l.readDir(dir)
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		present[e.Name()] = true
	}
	return present, diags
}

// pluginFromYAML reads metadata.yaml (with `_path` loading) and the fixed files
// listed in present (the plugin directory's names; nil lists it here).
func (l *loadCtx) pluginFromYAML(dir, metaFile string, present map[string]bool) (*pluginDoc, hcl.Diagnostics) {
	if present == nil {
		present, _ = l.dirNames(dir)
	}
	meta, diags := l.paths.expandFile(metaFile, fileRange(metaFile), nil)
	if meta == nil {
		return nil, diags
	}
	doc := &pluginDoc{metaFile: metaFile, meta: meta, files: map[string]*Value{}, fileNames: map[string]string{}}
	for _, ff := range fixedFiles {
		if !present[ff.name] {
			continue
		}
		name := path.Join(dir, ff.name)
		v, d := l.r.data(name, fileRange(name))
		diags = append(diags, d...)
		if v != nil {
			doc.files[ff.name] = v
			doc.fileNames[ff.name] = name
		}
	}
	return doc, diags
}

// buildPlugin validates a plugin document and turns it into the model.
func (l *loadCtx) buildPlugin(dir string, doc *pluginDoc) (*Plugin, hcl.Diagnostics) {
	c := &checker{}
	meta := doc.meta
	p := &Plugin{Dir: dir, MetadataFile: doc.metaFile, Metadata: meta, NameRange: fileRange(doc.metaFile)}
	if !c.mapping(meta, doc.metaFile) {
		return nil, c.diags
	}
	what := "plugin " + path.Base(dir)
	known := checkPackageVersion(c, p, doc.metaFile, what)
	checkPluginFields(c, p, what)
	release5 := known && versionAtLeast(p.PackageVersion, "5.0.0")
	checkDeprecatedCompat(c, meta, what, p.PackageVersion, known, release5)
	l.pluginReleases(c, p, meta, release5)
	for _, ff := range fixedFiles {
		v, ok := doc.files[ff.name]
		if !ok {
			continue
		}
		file := doc.fileNames[ff.name]
		if known && !versionAtLeast(p.PackageVersion, ff.since) {
			c.warnf(fileRange(file), "%s: %s is not read by package_version %s (it needs %s or later)", what, ff.name, p.PackageVersion, ff.since)
			continue
		}
		readFixedFile(c, p, ff.name, v, file, what)
	}
	return p, c.diags
}

// checkPackageVersion reads the metadata's package_version into p (one fuel
// does not support is an error) and checks that the metadata has the fields
// its format requires (the newest format's when the version is not known).
// known says whether the version is supported.
func checkPackageVersion(c *checker, p *Plugin, metaFile, what string) (known bool) {
	meta := p.Metadata
	pv, _ := c.str(meta, "package_version", what, true)
	p.PackageVersion = pv
	known = slices.Contains(SupportedPackageVersions, pv)
	if pv != "" && !known {
		c.add(withDetail(errorAt(meta.Get("package_version").Range, "unsupported package_version %q; supported versions are %s", pv, strings.Join(SupportedPackageVersions, ", ")),
			"Plugins built for Fuel 7 and later use 3.0.0 or 4.0.0; release-as-a-plugin packages use 5.0.0 or 6.0.0."))
	}
	schema := pv
	if !known {
		schema = "6.0.0" // check the rest against the newest format
	}
	for _, k := range requiredMetadata(schema) {
		if k != "package_version" && meta.Get(k).IsNull() {
			c.errf(meta.Range, "%s: missing required field %q in %s", what, k, path.Base(metaFile))
		}
	}
	return known
}

// checkPluginFields reads the metadata's descriptive fields into p (name,
// title, version, description, is_hotpluggable) and checks the others'
// types (licenses, authors) and values (groups).
func checkPluginFields(c *checker, p *Plugin, what string) {
	meta := p.Metadata
	if name, ok := c.str(meta, "name", what, false); ok {
		p.Name = name
		p.NameRange = meta.Get("name").Range
		c.pattern(p.NameRange, rePluginName(), name, "plugin name", rulePluginName)
	}
	p.Title, _ = c.str(meta, "title", what, false)
	p.Version, _ = c.str(meta, "version", what, false)
	p.Description, _ = c.str(meta, "description", what, false)
	c.strList(meta, "licenses", what, false, false)
	c.strList(meta, "authors", what, false, false)
	if groups, ok := c.strList(meta, "groups", what, false, false); ok {
		for i, g := range groups {
			if !pluginGroups[g] {
				c.errf(meta.Get("groups").Items[i].Range, "%s: unknown group %q; known groups are equipment, hypervisor, monitoring, network, storage, storage::cinder, storage::glance", what, g)
			}
		}
	}
	p.IsHotpluggable, _ = c.boolean(meta, "is_hotpluggable", what)
}

// checkDeprecatedCompat checks the older ways of saying which releases a
// plugin supports: fuel_version (deprecated from package_version 5.0.0, else
// checked against the format) and mode/modes (deprecated from 5.0.0).
func checkDeprecatedCompat(c *checker, meta *Value, what, pv string, known, release5 bool) {
	if fv, ok := c.strList(meta, "fuel_version", what, false, false); ok {
		if release5 {
			c.add(withDetail(warnAt(where(meta, "fuel_version"), "%s: fuel_version is deprecated in package_version %s", what, pv),
				"Release compatibility is expressed by the releases: records; remove fuel_version."))
		} else if known {
			checkFuelVersion(c, meta.Get("fuel_version"), fv, pv)
		}
	}
	for _, k := range []string{"mode", "modes"} {
		if meta.Has(k) && release5 {
			c.warnf(where(meta, k), "%s: %s is deprecated in package_version %s", what, k, pv)
		}
	}
}

// readFixedFile checks one of the package format's fixed files (name, read
// from file as v) and puts what it defines into p.
func readFixedFile(c *checker, p *Plugin, name string, v *Value, file, what string) {
	switch name {
	case "environment_config.yaml":
		if !v.IsNull() && c.mapping(v, file) {
			p.Attributes = v.Get("attributes")
		}
	case "tasks.yaml":
		if v.IsList() && len(v.Items) > 0 {
			p.LegacyTasks = v.Items
			c.add(withDetail(warnAt(v.Range, "%s: tasks.yaml (legacy pre/post deployment tasks) is deprecated", what),
				"Move these tasks to deployment_tasks.yaml as task-based (version 2.x) tasks with explicit requires/required_for."))
		} else if !v.IsNull() && !v.IsList() {
			c.errf(v.Range, "%s: tasks.yaml must be a list, not a %s", what, v.Kind)
		}
	case "deployment_tasks.yaml":
		if tasks := checkTaskList(c, v, file); tasks != nil || v.IsList() {
			p.Graphs = append(p.Graphs, &Graph{Type: "default", Tasks: tasks, Range: v.Range})
		}
	case "node_roles.yaml":
		p.Roles = checkRoles(c, v, file, true)
	case "volumes.yaml":
		if checkVolumes(c, v, file) {
			p.Volumes = v
		}
	case "network_roles.yaml":
		if checkNetworkRoles(c, v, file) {
			p.NetworkRoles = v
		}
	case "components.yaml":
		p.Components = checkComponents(c, v, file, true)
	case "node_tags.yaml":
		p.Tags = checkTagsMeta(c, v, file)
	}
}

// checkFuelVersion applies fuel-plugin-builder's compatibility rule: every
// fuel_version must be at least the first Fuel release that reads the package format.
func checkFuelVersion(c *checker, v *Value, versions []string, pv string) {
	basic := map[string]string{"3.0.0": "7.0", "4.0.0": "8.0"}[pv]
	if basic == "" {
		return
	}
	for i, fv := range versions {
		if !versionAtLeast(fv, basic) {
			c.errf(v.Items[i].Range, "Current plugin format %s is not compatible with %s Fuel release. Fuel version must be %s or higher.", pv, fv, basic)
		}
	}
}

// pluginReleases splits `releases:` into compatibility records and release
// definitions and applies the release-as-a-plugin rules.
func (l *loadCtx) pluginReleases(c *checker, p *Plugin, meta *Value, release5 bool) {
	rels := meta.Get("releases")
	if rels.IsNull() {
		return
	}
	if rels.Kind != KindList {
		c.errf(rels.Range, "plugin %s: releases must be a list, not a %s", p.Name, rels.Kind)
		return
	}
	var firstDef, firstCompat *Value
	for _, rec := range rels.Items {
		if !c.mapping(rec, "each item of releases") {
			continue
		}
		isRel, _ := c.boolean(rec, "is_release", "release record")
		if !isRel {
			if firstCompat == nil {
				firstCompat = rec
			}
			p.Compatible = append(p.Compatible, checkCompat(c, rec, p.PackageVersion, release5))
			continue
		}
		if firstDef == nil {
			firstDef = rec
		}
		if !release5 {
			c.errf(where(rec, "is_release"), "plugin %s: is_release needs package_version 5.0.0 or later (this package is %s)", p.Name, p.PackageVersion)
			continue
		}
		if r := l.buildRelease(c, p, rec); r != nil {
			p.Defines = append(p.Defines, r)
		}
	}
	if firstDef != nil && firstCompat != nil {
		c.add(withDetail(errorAt(firstCompat.Range, "plugin %s both defines a release and extends releases; a plugin does one or the other", p.Name),
			"Put the release (is_release: true) in its own plugin, and the extension in another plugin whose releases: records name it."))
	}
	if len(p.Defines) > 1 {
		c.warnf(rels.Range, "plugin %s defines %d releases; one release per plugin is recommended", p.Name, len(p.Defines))
	}
	if len(p.Defines) > 0 {
		for _, r := range p.Defines {
			if p.Name != "" && r.Name != "" && r.Name != p.Name {
				c.add(withDetail(warnAt(r.Range, "plugin name %q differs from release_name %q", p.Name, r.Name),
					"The release-as-a-plugin spec names a release plugin after its release."))
			}
		}
		if meta.Has("is_hotpluggable") {
			c.warnf(where(meta, "is_hotpluggable"), "plugin %s: is_hotpluggable has no meaning for a release plugin and is ignored", p.Name)
		}
	}
}

func checkCompat(c *checker, rec *Value, pv string, release5 bool) *Compat {
	cp := &Compat{Range: rec.Range}
	cp.OS, _ = c.str(rec, "os", "release record", true)
	cp.Version, _ = c.str(rec, "version", "release record", true)
	if rec.Has("mode") || rec.Has("modes") {
		key := "mode"
		if !rec.Has("mode") {
			key = "modes"
		}
		cp.Mode, _ = c.strList(rec, key, "release record", false, true)
		if release5 {
			c.warnf(where(rec, key), "release record: %s is deprecated in package_version %s", key, pv)
		}
	} else if !release5 {
		c.errf(rec.Range, "release record: missing required field \"mode\"")
	}
	return cp
}

// knownTaskKeys are the task keys that mean something (for misspelling warnings).
var knownTaskKeys = map[string]bool{
	"id": true, "task_name": true, "type": true, "version": true, "role": true, "roles": true, "groups": true, "tags": true,
	"requires": true, "required_for": true, "cross-depends": true, "cross-depended-by": true, "cross_depends": true,
	"cross_depended_by": true, "condition": true, "parameters": true, "tasks": true, "fault_tolerance": true,
	"reexecute_on": true, "refresh_on": true, "test_pre": true, "test_post": true, "stage": true, "description": true,
}

// TaskTypes are the task types nailgun's orchestrator knows.
var TaskTypes = []string{"puppet", "shell", "sync", "upload_file", "group", "stage", "skipped", "reboot", "copy_files", "role", "master_shell", "move_to_bootstrap", "erase_node"}

// checkTaskList validates a list of tasks (a graph) and returns them. Duplicate ids
// within one list are an error, as nailgun's graph upload rejects them.
func checkTaskList(c *checker, v *Value, file string) []*Task {
	if v.IsNull() {
		return nil
	}
	if v.Kind != KindList {
		c.errf(v.Range, "%s: the tasks must be a list, not a %s", file, v.Kind)
		return nil
	}
	tasks := make([]*Task, 0, len(v.Items))
	seen := map[string]*Task{}
	for _, it := range v.Items {
		t := checkTask(c, it)
		if t == nil {
			continue
		}
		if prev, dup := seen[t.ID]; dup && t.ID != "" {
			c.add(withDetail(errorAt(t.Range, "duplicate task id %q (also at %s:%d)", t.ID, prev.Range.Filename, prev.Range.Start.Line),
				"Task ids are unique within a graph."))
			continue
		}
		seen[t.ID] = t
		tasks = append(tasks, t)
	}
	return tasks
}

// checkTask validates one task and returns it, or nil when it is not a
// mapping.
func checkTask(c *checker, v *Value) *Task {
	if !c.mapping(v, "a task") {
		return nil
	}
	t := &Task{Data: v, Range: v.Range}
	what := "task"
	if id, ok := c.str(v, "id", what, true); ok {
		t.ID = id
		t.Range = v.Get("id").Range
		what = "task " + id
		c.pattern(t.Range, reTaskID, id, "task id", ruleTaskID)
	}
	if typ, ok := c.str(v, "type", what, true); ok {
		t.Type = typ
		if !slices.Contains(TaskTypes, typ) {
			c.errf(v.Get("type").Range, "%s: unknown type %q; known types are %s", what, typ, strings.Join(TaskTypes, ", "))
		}
	}
	if ver, ok := c.str(v, "version", what, false); ok && !isVersion(ver) {
		c.errf(v.Get("version").Range, "%s: version %q must look like 1.0.0", what, ver)
	}
	for _, key := range []string{"tags", "role", "roles", "groups"} {
		checkSelector(c, v, key, what)
	}
	for _, key := range []string{"requires", "required_for", "tasks"} {
		checkNames(c, v, key, what)
	}
	for _, key := range []string{"cross-depends", "cross-depended-by", "cross_depends", "cross_depended_by"} {
		checkCrossDeps(c, v, key, what)
	}
	if p := v.Get("parameters"); !p.IsNull() && !p.IsMap() {
		c.errf(p.Range, "%s: parameters must be a mapping, not a %s", what, p.Kind)
	}
	if cond := v.Get("condition"); !cond.IsNull() && cond.Kind != KindString && !(cond.IsMap() && cond.Has("yaql_exp")) {
		c.errf(cond.Range, "%s: condition must be an expression string or {yaql_exp: ...}", what)
	}
	c.misspelled(v, knownTaskKeys, what)
	return t
}

// checkSelector validates a task selector: '*', a name, a /regex/ that compiles, or a
// list of those.
func checkSelector(c *checker, m *Value, key, what string) {
	v := m.Get(key)
	if v.IsNull() {
		return
	}
	items := []*Value{v}
	if v.Kind == KindList {
		items = v.Items
	}
	for _, it := range items {
		s, ok := it.Str()
		if !ok {
			if it.IsMap() && it.Has("yaql_exp") {
				continue
			}
			c.errf(it.Range, "%s: %s must be a string or a list of strings, not a %s", what, key, it.Kind)
			continue
		}
		checkNameOrRegex(c, it.Range, s, key, what, reSelectorName)
	}
}

// checkNameOrRegex checks one selector or dependency name.
func checkNameOrRegex(c *checker, r hcl.Range, s, key, what string, names matcher) {
	if len(s) >= 2 && strings.HasPrefix(s, "/") && strings.HasSuffix(s, "/") {
		if err := compileError(s[1 : len(s)-1]); err != nil {
			c.add(withDetail(errorAt(r, "%s: %s: regular expression %s does not compile: %s", what, key, s, strings.TrimPrefix(err.Error(), "error parsing regexp: ")),
				"fuelsync uses Go (RE2) syntax: no look-ahead or back-references."))
		}
		return
	}
	if !names.MatchString(s) {
		c.errf(r, "%s: %s: %q should be either a valid regexp enclosed by slashes or a name of letters, digits, '_', '-' (or '*')", what, key, s)
	}
}

// checkNames validates requires/required_for/tasks: lists of task names or /regex/.
func checkNames(c *checker, m *Value, key, what string) {
	v := m.Get(key)
	if v.IsNull() {
		return
	}
	if v.Kind != KindList {
		c.errf(v.Range, "%s: %s must be a list of task names, not a %s", what, key, v.Kind)
		return
	}
	for _, it := range v.Items {
		s, ok := it.Str()
		if !ok {
			c.errf(it.Range, "%s: every item of %s must be a task name, not a %s", what, key, it.Kind)
			continue
		}
		checkNameOrRegex(c, it.Range, s, key, what, reDepName)
	}
}

// checkCrossDeps validates cross-depends / cross-depended-by entries.
func checkCrossDeps(c *checker, m *Value, key, what string) {
	v := m.Get(key)
	if v.IsNull() {
		return
	}
	if v.IsMap() && v.Has("yaql_exp") {
		return
	}
	if v.Kind != KindList {
		c.errf(v.Range, "%s: %s must be a list of {name, role|tags, policy}, not a %s", what, key, v.Kind)
		return
	}
	for _, it := range v.Items {
		if !it.IsMap() {
			c.errf(it.Range, "%s: every item of %s must be a mapping {name, role|tags, policy}", what, key)
			continue
		}
		if it.Has("yaql_exp") {
			continue
		}
		if name, ok := c.str(it, "name", what+": "+key, true); ok {
			checkNameOrRegex(c, it.Get("name").Range, name, key, what, reDepName)
		}
		for _, sel := range []string{"role", "roles", "tags"} {
			if s := it.Get(sel); s != nil && !s.IsNull() {
				checkSelector(c, it, sel, what+": "+key)
			}
		}
		if pol, ok := c.str(it, "policy", what, false); ok && pol != "all" && pol != "any" {
			c.errf(it.Get("policy").Range, "%s: %s: policy must be all or any, not %q", what, key, pol)
		}
	}
}

var knownRoleKeys = map[string]bool{
	"name": true, "description": true, "weight": true, "group": true, "conflicts": true, "update_required": true,
	"update_once": true, "public_ip_required": true, "public_for_dvr_required": true, "limits": true, "restrictions": true,
	"fault_tolerance": true, "tags": true, "has_primary": true,
}

// checkRoles validates a roles mapping (node_roles.yaml or roles_metadata).
func checkRoles(c *checker, v *Value, file string, plugin bool) []*Role {
	if v.IsNull() {
		return nil
	}
	if !c.mapping(v, file+": roles") {
		return nil
	}
	roles := make([]*Role, 0, len(v.Fields))
	for _, f := range v.Fields {
		role := &Role{Name: f.Key, Data: f.Value, Range: f.KeyRange}
		c.pattern(f.KeyRange, reRoleName(), f.Key, "role name", ruleRoleName)
		what := "role " + f.Key
		if !c.mapping(f.Value, what) {
			continue
		}
		c.str(f.Value, "name", what, plugin)
		c.str(f.Value, "description", what, plugin)
		if tags, ok := c.strList(f.Value, "tags", what, false, false); ok {
			role.Tags, role.HasTags = tags, true
		}
		role.HasPrimary, _ = c.boolean(f.Value, "has_primary", what)
		for _, k := range []string{"public_ip_required", "public_for_dvr_required"} {
			c.boolean(f.Value, k, what)
		}
		for _, k := range []string{"update_required", "update_once"} {
			c.strList(f.Value, k, what, false, false)
		}
		if cf := f.Value.Get("conflicts"); !cf.IsNull() {
			if cf.Kind == KindString {
				if cf.Text != "*" {
					c.errf(cf.Range, "%s: conflicts must be a list of roles or \"*\", not %q", what, cf.Text)
				}
			} else {
				c.strList(f.Value, "conflicts", what, false, false)
			}
		}
		if w := f.Value.Get("weight"); !w.IsNull() && w.Kind != KindInt {
			c.errf(w.Range, "%s: weight must be an integer", what)
		}
		checkLimits(c, f.Value.Get("limits"), what)
		checkRestrictions(c, f.Value.Get("restrictions"), what)
		c.misspelled(f.Value, knownRoleKeys, what)
		roles = append(roles, role)
	}
	return roles
}

func checkLimits(c *checker, v *Value, what string) {
	if v.IsNull() {
		return
	}
	if !c.mapping(v, what+": limits") {
		return
	}
	check := func(m *Value, w string) {
		for _, k := range []string{"min", "max", "recommended"} {
			if x := m.Get(k); !x.IsNull() && x.Kind != KindInt && x.Kind != KindString {
				c.errf(x.Range, "%s: %s must be an integer or an expression string", w, k)
			}
		}
	}
	check(v, what+": limits")
	if o := v.Get("overrides"); !o.IsNull() {
		if o.Kind != KindList {
			c.errf(o.Range, "%s: limits.overrides must be a list", what)
			return
		}
		for _, it := range o.Items {
			if c.mapping(it, what+": each limits override") {
				c.str(it, "condition", what+": limits override", true)
				check(it, what+": limits override")
			}
		}
	}
}

func checkRestrictions(c *checker, v *Value, what string) {
	if v.IsNull() {
		return
	}
	if v.Kind != KindList {
		c.errf(v.Range, "%s: restrictions must be a list", what)
		return
	}
	for _, it := range v.Items {
		switch {
		case it.Kind == KindString:
		case it.IsMap() && it.Has("condition"):
			c.str(it, "condition", what+": restriction", true)
		case it.IsMap() && len(it.Fields) == 1:
		default:
			c.errf(it.Range, "%s: a restriction is a condition string, {condition, message, action}, or {<condition>: <message>}", what)
		}
	}
}

// checkVolumes validates volumes.yaml / volumes_metadata.
func checkVolumes(c *checker, v *Value, file string) bool {
	if v.IsNull() || !c.mapping(v, file) {
		return false
	}
	ok := true
	if vols := v.Get("volumes"); vols == nil {
		c.errf(v.Range, "%s: missing required field \"volumes\"", file)
		ok = false
	} else if !vols.IsNull() && vols.Kind != KindList {
		c.errf(vols.Range, "%s: volumes must be a list", file)
		ok = false
	} else {
		for _, it := range vols.Items {
			if c.mapping(it, file+": each volume") {
				c.str(it, "id", "volume", true)
				c.str(it, "type", "volume", true)
			}
		}
	}
	m := v.Get("volumes_roles_mapping")
	if m.IsNull() {
		c.errf(v.Range, "%s: missing required field \"volumes_roles_mapping\"", file)
		return false
	}
	if !c.mapping(m, file+": volumes_roles_mapping") {
		return false
	}
	for _, f := range m.Fields {
		if f.Value.Kind != KindList || len(f.Value.Items) == 0 {
			c.errf(f.KeyRange, "%s: volumes_roles_mapping of role %s must be a non-empty list of {id, allocate_size}", file, f.Key)
			ok = false
			continue
		}
		for _, it := range f.Value.Items {
			if !c.mapping(it, "a volume mapping") {
				continue
			}
			c.str(it, "id", "volume mapping of role "+f.Key, true)
			if a, has := c.str(it, "allocate_size", "volume mapping of role "+f.Key, true); has && a != "all" && a != "min" && a != "full-disk" {
				c.errf(it.Get("allocate_size").Range, "volume mapping of role %s: allocate_size must be all, min or full-disk, not %q", f.Key, a)
			}
		}
	}
	return ok
}

// checkNetworkRoles validates network_roles.yaml / network_roles_metadata.
func checkNetworkRoles(c *checker, v *Value, file string) bool {
	if v.IsNull() {
		return false
	}
	if v.Kind != KindList {
		c.errf(v.Range, "%s: network roles must be a list, not a %s", file, v.Kind)
		return false
	}
	for _, it := range v.Items {
		if c.mapping(it, "a network role") {
			c.str(it, "id", "network role", true)
		}
	}
	return true
}

var knownComponentKeys = map[string]bool{"name": true, "label": true, "description": true, "compatible": true, "requires": true, "incompatible": true, "bind": true, "default": true, "weight": true}

// checkComponents validates components.yaml / components_metadata.
func checkComponents(c *checker, v *Value, file string, plugin bool) []*Component {
	if v.IsNull() {
		return nil
	}
	if v.Kind != KindList {
		c.errf(v.Range, "%s: components must be a list, not a %s", file, v.Kind)
		return nil
	}
	var out []*Component
	for _, it := range v.Items {
		if !c.mapping(it, "a component") {
			continue
		}
		name, ok := c.str(it, "name", "component", true)
		if !ok {
			continue
		}
		comp := &Component{Name: name, Data: it, Range: it.Get("name").Range}
		what := "component " + name
		c.pattern(comp.Range, reComponentName(), name, "component name", ruleComponentName)
		if plugin {
			c.str(it, "label", what, true)
		}
		for _, rel := range []string{"compatible", "incompatible", "requires"} {
			checkComponentRefs(c, it.Get(rel), rel, what)
		}
		c.misspelled(it, knownComponentKeys, what)
		out = append(out, comp)
	}
	return out
}

var predicates = []string{"one_of", "any_of", "none_of", "all_of"}

func checkComponentRefs(c *checker, v *Value, rel, what string) {
	if v.IsNull() {
		return
	}
	if v.Kind != KindList {
		c.errf(v.Range, "%s: %s must be a list", what, rel)
		return
	}
	ref := func(r hcl.Range, s string) {
		if !reComponentRef().MatchString(s) {
			c.errf(r, "%s: %s: invalid component reference %q: %s, optionally ending in *", what, rel, s, ruleComponentName)
		}
	}
	for _, it := range v.Items {
		if !it.IsMap() {
			c.errf(it.Range, "%s: each %s entry must be a mapping {name, message}", what, rel)
			continue
		}
		if rel == "requires" {
			if pred := predicateOf(it); pred != "" {
				items := it.Get(pred).Get("items")
				if names, ok := items.Strings(); ok && items.IsList() {
					for i, n := range names {
						ref(items.Items[i].Range, n)
					}
				} else {
					c.errf(it.Get(pred).Range, "%s: requires: %s needs {items: [component names]}", what, pred)
				}
				continue
			}
		}
		if n, ok := c.str(it, "name", what+": "+rel, true); ok {
			ref(it.Get("name").Range, n)
		}
	}
}

// predicateOf returns the predicate key of a requires entry in the predicate form.
func predicateOf(v *Value) string {
	for _, p := range predicates {
		if v.Has(p) {
			return p
		}
	}
	return ""
}

// checkTagsMeta validates tags metadata (node_tags.yaml, tags_metadata, cluster tags).
func checkTagsMeta(c *checker, v *Value, file string) []*TagMeta {
	if v.IsNull() {
		return nil
	}
	if !c.mapping(v, file+": tags") {
		return nil
	}
	out := make([]*TagMeta, 0, len(v.Fields))
	for _, f := range v.Fields {
		t := &TagMeta{Name: f.Key, Range: f.KeyRange}
		if !f.Value.IsNull() && c.mapping(f.Value, "tag "+f.Key) {
			t.HasPrimary, _ = c.boolean(f.Value, "has_primary", "tag "+f.Key)
		}
		out = append(out, t)
	}
	return out
}
