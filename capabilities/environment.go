package capabilities

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// envSections are the sections an environment may have: Heat's, and requires.
var envSections = []string{"parameters", "resource_registry", "parameter_defaults", "encrypted_param_names",
	"event_sinks", "parameter_merge_strategies", "requires"}

// Entry is one resource_registry entry as an environment writes it.
type Entry struct {
	Key string
	// Value is a template path (repository-relative once resolved) or a type
	// (an alias, OS::Heat::None); Candidates a list of template paths; Delete a
	// null (the entry is removed).
	Value      string
	Candidates []string
	Delete     bool
	// Env is the environment that wrote it, Range where.
	Env   string
	Range hcl.Range
}

// Environment is a parsed environment file.
type Environment struct {
	Path     string
	Registry []Entry
	// Resources are the per-resource overrides: resource name → type → entry.
	Resources map[string][]Entry
	Requires  map[string]string
	// RequiresRanges say where each requires key is written; requiresValues
	// where its value is.
	RequiresRanges map[string]hcl.Range
	requiresValues map[string]hcl.Range

	params         []paramEntry
	strategies     map[string]string
	strategyRanges map[string]hcl.Range
}

// isTemplatePath is Heat's test (environment.py): a value ending in .yaml or
// .template names a template; anything else is a type.
func isTemplatePath(s string) bool {
	return strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".template")
}

// isJinja reports whether name is a Jinja2 template (TripleO's *.j2.yaml),
// which Heat never reads: it is rendered into an environment first.
func isJinja(name string) bool {
	for _, ext := range []string{".j2.yaml", ".j2.yml", ".j2"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// ParseEnvironment reads an environment file of the repository fsys (name is
// repository-relative): paths are resolved relative to the file's directory; one
// leaving the repository is an error.
func ParseEnvironment(name string, src []byte) (*Environment, hcl.Diagnostics) {
	if isJinja(name) {
		end := bytes.IndexByte(src, '\n')
		if end < 0 {
			end = len(src)
		}
		r := hcl.Range{Filename: name, Start: hcl.Pos{Line: 1, Column: 1}, End: hcl.Pos{Line: 1, Column: 1 + utf8.RuneCount(src[:end]), Byte: end}}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError,
			Summary: fmt.Sprintf("%s is a Jinja2 template, not an environment: render it first", name),
			Detail: "TripleO's *.j2.yaml files are rendered into environments by tools/process-templates.py " +
				"(with the roles_data.yaml and network_data.yaml of the deployment); commit the rendered " +
				"file and list it in the cluster's environments: instead.",
			Subject: &r}}
	}
	v, diags := loader.DecodeYAML(name, src)
	if diags.HasErrors() {
		return nil, diags
	}
	env, more := EnvironmentFromValue(name, v)
	return env, append(diags, more...)
}

// EnvironmentFromValue reads an environment from a decoded tree: a file's, or the
// inline sections of a cluster spec (name is then the cluster file, whose
// directory paths are relative to).
func EnvironmentFromValue(name string, v *loader.Value) (*Environment, hcl.Diagnostics) {
	p := &envParser{name: name, dir: path.Dir(name), env: &Environment{Path: name, Resources: map[string][]Entry{},
		Requires: map[string]string{}, RequiresRanges: map[string]hcl.Range{}, requiresValues: map[string]hcl.Range{},
		strategies: map[string]string{}, strategyRanges: map[string]hcl.Range{}}}
	if v.IsNull() {
		return p.env, p.diags
	}
	if !v.IsMap() {
		p.bad(v.Range, "an environment is a mapping of sections")
		return p.env, p.diags
	}
	for _, sec := range v.Fields {
		p.section(sec)
	}
	return p.env, p.diags
}

// envParser reads one environment's sections into env, collecting every
// problem in diags.
type envParser struct {
	// name is the environment's file, dir its directory (what template paths
	// are relative to).
	name, dir string
	env       *Environment
	diags     hcl.Diagnostics
}

// bad records an error at r.
func (p *envParser) bad(r hcl.Range, format string, args ...any) {
	p.diags = append(p.diags, errAt(r, format, args...))
}

// section reads one top-level section, after checking it is one an
// environment may have and is not empty.
func (p *envParser) section(sec loader.Field) {
	if !slices.Contains(envSections, sec.Key) {
		if best := loader.Suggest(sec.Key, envSections); best != "" {
			p.bad(sec.KeyRange, "environment has wrong section %q; did you mean %q?", sec.Key, best)
		} else {
			p.bad(sec.KeyRange, "environment has wrong section %q", sec.Key)
		}
		return
	}
	if sec.Value.IsNull() {
		p.bad(sec.KeyRange, "environment has empty section %q", sec.Key)
		return
	}
	switch sec.Key {
	case "parameter_defaults", "parameter_merge_strategies":
		p.env.parseParams(sec, p.bad)
	case "requires":
		p.requires(sec.Value)
	case "resource_registry":
		p.registry(sec.Value)
	}
}

// requires reads the requires section: capability keys to string values.
func (p *envParser) requires(v *loader.Value) {
	if !v.IsMap() {
		p.bad(v.Range, "requires maps capability keys to values")
		return
	}
	for _, f := range v.Fields {
		s, ok := f.Value.Str()
		if !reKey().MatchString(f.Key) || !ok || f.Value.Kind != loader.KindString {
			p.bad(f.KeyRange, "requires: %q must be a capability key (%s) with a string value", f.Key, reKey())
			continue
		}
		p.env.Requires[f.Key], p.env.RequiresRanges[f.Key], p.env.requiresValues[f.Key] = s, f.KeyRange, f.Value.Range
	}
}

// registry reads the resource_registry section: its entries, and the
// per-resource overrides under resources (base_url is Heat's and ignored).
func (p *envParser) registry(v *loader.Value) {
	if !v.IsMap() {
		p.bad(v.Range, "resource_registry is a mapping")
		return
	}
	for _, f := range v.Fields {
		switch f.Key {
		case "resources":
			p.resources(f.Value)
		case "base_url":
		default:
			if e, ok := p.entry(f.Key, f.KeyRange, f.Value); ok {
				p.env.Registry = append(p.env.Registry, e)
			}
		}
	}
}

// resources reads resource_registry's resources: resource name → a registry
// of its own (whose hooks and restricted_actions are Heat's and ignored).
func (p *envParser) resources(v *loader.Value) {
	if !v.IsMap() {
		p.bad(v.Range, "resource_registry resources maps resource names to registries")
		return
	}
	for _, res := range v.Fields {
		if !res.Value.IsMap() {
			p.bad(res.Value.Range, "resource_registry resources %q is a mapping", res.Key)
			continue
		}
		for _, rf := range res.Value.Fields {
			if rf.Key == "hooks" || rf.Key == "restricted_actions" {
				continue
			}
			if e, ok := p.entry(rf.Key, rf.KeyRange, rf.Value); ok {
				p.env.Resources[res.Key] = append(p.env.Resources[res.Key], e)
			}
		}
	}
}

// entry reads one registry entry: null (delete), a template path (resolved),
// a type, or a list of candidate template paths.
func (p *envParser) entry(key string, keyRange hcl.Range, val *loader.Value) (Entry, bool) {
	e := Entry{Key: key, Env: p.name, Range: keyRange}
	switch {
	case val.IsNull():
		e.Delete = true
	case val.Kind == loader.KindString:
		e.Value = val.Text
		if isTemplatePath(val.Text) {
			rel, ok := p.resolve(val.Text, val.Range)
			if !ok {
				return e, false
			}
			e.Value = rel
		}
	case val.IsList():
		cands, ok := p.candidates(key, val)
		if !ok {
			return e, false
		}
		e.Candidates = cands
	default:
		p.bad(val.Range, "resource_registry %q: a value is a template path, a type, a list of template paths or null, not a %s", key, kindName(val))
		return e, false
	}
	return e, true
}

// candidates reads an entry's list of candidate templates: a non-empty list
// of template paths, each resolved.
func (p *envParser) candidates(key string, val *loader.Value) ([]string, bool) {
	if len(val.Items) == 0 {
		p.bad(val.Range, "resource_registry %q: an empty list of candidates", key)
		return nil, false
	}
	var out []string
	for _, it := range val.Items {
		s, ok := it.Str()
		if !ok || it.Kind != loader.KindString {
			p.bad(it.Range, "resource_registry %q: list entries must be template paths, got a %s", key, kindName(it))
			return nil, false
		}
		if !isTemplatePath(s) {
			p.bad(it.Range, "resource_registry %q: list entries must be template paths, got %q", key, s)
			return nil, false
		}
		rel, ok := p.resolve(s, it.Range)
		if !ok {
			return nil, false
		}
		out = append(out, rel)
	}
	return out, true
}

// resolve makes template path s, relative to the environment's directory,
// repository-relative; an absolute path, a URL or one leaving the repository
// is an error.
func (p *envParser) resolve(s string, r hcl.Range) (string, bool) {
	if strings.Contains(s, "://") || path.IsAbs(s) {
		p.bad(r, "%q: template paths are relative to the environment's directory", s)
		return "", false
	}
	joined := path.Join(p.dir, s)
	if joined == ".." || strings.HasPrefix(joined, "../") {
		p.bad(r, "%q leaves the repository", s)
		return "", false
	}
	return joined, true
}

// Registry is the merged and resolved resource registry.
type Registry struct {
	Entries   map[string]Entry
	Resources map[string]map[string]Entry
	Requires  map[string]string
	// ParameterDefaults are the environments' parameter_defaults, merged.
	ParameterDefaults map[string]any
}

// Resolve merges envs in order (later wins per key, null deletes, resources
// merged per resource and type, requires per key) and resolves every list value
// against requires, reading candidate templates from fsys. Every problem is
// reported, sorted by key.
func Resolve(fsys fs.FS, envs []*Environment) (*Registry, hcl.Diagnostics) {
	return ResolveFor(fsys, envs, "")
}

// ResolveFor is Resolve on behalf of who ("cluster prod"), named in the errors
// that depend on its requires: environments are shared, and the same entry may
// resolve for one cluster and not for another.
//
// A requires value that no candidate of any list declares (a typo, or a value
// no template implements) is one error at the requires entry that set it,
// listing the registry keys it leaves unresolved, instead of one error per key
// at the environment's entries.
func ResolveFor(fsys fs.FS, envs []*Environment, who string) (*Registry, hcl.Diagnostics) {
	reg, reqAt := mergeRegistries(envs)
	r := &listResolver{fsys: fsys, reg: reg, templates: map[string]*Template{},
		unresolved: map[string][]Entry{}, declared: map[string][]string{}}
	if who != "" {
		r.prefix = who + ": "
	}
	r.collectDeclared()
	r.resolveLists()
	diags := r.diags
	for _, k := range sortedKeys(r.unresolved) {
		diags = append(diags, requiresTypo(r.prefix, k, reg.Requires[k], reqAt[k], r.declared[k], r.unresolved[k]))
	}
	diags = append(diags, reg.aliasCycles()...)
	params, d := mergeParams(envs)
	reg.ParameterDefaults = params
	diags = append(diags, d...)
	return reg, sortDiags(diags)
}

// mergeRegistries merges the environments' registries, per-resource
// registries and requires in order: a later entry replaces an earlier one with
// the same key, a null deletes it. reqAt says where each requires value in
// force was written.
func mergeRegistries(envs []*Environment) (reg *Registry, reqAt map[string]hcl.Range) {
	reg = &Registry{Entries: map[string]Entry{}, Resources: map[string]map[string]Entry{}, Requires: map[string]string{}}
	reqAt = map[string]hcl.Range{}
	for _, env := range envs {
		for k, v := range env.Requires {
			reg.Requires[k] = v
			reqAt[k] = env.requiresValues[k]
		}
		for _, e := range env.Registry {
			if e.Delete {
				reg.deleteEntry(e.Key)
				continue
			}
			reg.Entries[e.Key] = e
		}
		for res, entries := range env.Resources {
			if reg.Resources[res] == nil {
				reg.Resources[res] = map[string]Entry{}
			}
			for _, e := range entries {
				if e.Delete {
					delete(reg.Resources[res], e.Key)
					continue
				}
				reg.Resources[res][e.Key] = e
			}
		}
	}
	return reg, reqAt
}

// deleteEntry removes the entry key (a null in a later environment); a glob
// key ("OS::TripleO::Services::*") also removes every entry it matches.
func (r *Registry) deleteEntry(key string) {
	if prefix, isGlob := strings.CutSuffix(key, "*"); isGlob {
		for k := range r.Entries {
			if strings.HasPrefix(k, prefix) {
				delete(r.Entries, k)
			}
		}
	}
	delete(r.Entries, key)
}

// listResolver resolves the merged registry's lists of candidate templates
// against its requires, reading each template once.
type listResolver struct {
	fsys fs.FS
	reg  *Registry
	// prefix names whom the registry is resolved for ("cluster prod: "), or is
	// empty.
	prefix    string
	templates map[string]*Template
	// unresolved[k] are the entries whose list no candidate matches because of
	// requires key k's value; declared[k] the values the candidates declare.
	unresolved map[string][]Entry
	declared   map[string][]string
	diags      hcl.Diagnostics
}

// load reads and parses candidate template p once; its parse errors are
// recorded in diags.
func (r *listResolver) load(p string) (*Template, error) {
	if t, ok := r.templates[p]; ok {
		return t, nil
	}
	src, err := fs.ReadFile(r.fsys, p)
	if err != nil {
		return nil, err
	}
	t, ok, d := ParseTemplate(p, src)
	// Only errors: the YAML decoder's warnings about the rest of a template
	// (a key written twice in a resource) are Heat's business, not the
	// registry's, and the templates are often upstream files.
	for _, x := range d {
		if x.Severity == hcl.DiagError {
			r.diags = append(r.diags, x)
		}
	}
	if !ok {
		return nil, fmt.Errorf("not a Heat template")
	}
	r.templates[p] = t
	return t, nil
}

// candidates loads e's candidate templates; a missing one is an error at e.
func (r *listResolver) candidates(e Entry) ([]*Template, bool) {
	var cands []*Template
	for _, p := range e.Candidates {
		t, err := r.load(p)
		if err != nil {
			r.diags = append(r.diags, errAt(e.Range, "resource_registry %q: candidate %q not found", e.Key, p))
			return nil, false
		}
		cands = append(cands, t)
	}
	return cands, true
}

// collectDeclared records in declared every value each capability key has in
// some candidate of some list (a template that does not load is reported by
// resolveList).
func (r *listResolver) collectDeclared() {
	visit := func(e Entry) {
		for _, p := range e.Candidates {
			t, err := r.load(p)
			if err != nil {
				continue
			}
			for k, vals := range t.Values {
				for _, v := range vals {
					if !slices.Contains(r.declared[k], v) {
						r.declared[k] = append(r.declared[k], v)
					}
				}
			}
		}
	}
	for _, k := range sortedKeys(r.reg.Entries) {
		if e := r.reg.Entries[k]; e.Candidates != nil {
			visit(e)
		}
	}
	for _, res := range sortedResources(r.reg.Resources) {
		for _, k := range sortedKeys(r.reg.Resources[res]) {
			if e := r.reg.Resources[res][k]; e.Candidates != nil {
				visit(e)
			}
		}
	}
}

// resolveLists replaces every list entry, of the registry and of each
// resource, by the one candidate that matches, and drops the entries that
// resolve to none or to several.
func (r *listResolver) resolveLists() {
	for _, k := range sortedKeys(r.reg.Entries) {
		if e := r.reg.Entries[k]; e.Candidates != nil {
			if resolved := r.resolveList(e); resolved.Key != "" {
				r.reg.Entries[k] = resolved
			} else {
				delete(r.reg.Entries, k)
			}
		}
	}
	for _, res := range sortedResources(r.reg.Resources) {
		for k, e := range r.reg.Resources[res] {
			if e.Candidates != nil {
				if resolved := r.resolveList(e); resolved.Key != "" {
					r.reg.Resources[res][k] = resolved
				} else {
					delete(r.reg.Resources[res], k)
				}
			}
		}
	}
}

// resolveList is list entry e resolved to its one matching candidate, or the
// zero Entry (with the error recorded) when none or several match.
func (r *listResolver) resolveList(e Entry) Entry {
	cands, ok := r.candidates(e)
	if !ok {
		return Entry{}
	}
	keys := r.relevantRequires(cands)
	matched := r.matching(e.Key, cands, keys)
	req := formatRequires(r.reg.Requires, keys)
	switch len(matched) {
	case 1:
		out := e
		out.Value, out.Candidates = matched[0].Path, nil
		return out
	case 0:
		r.noMatch(e, cands, keys, req)
	default:
		var paths []string
		for _, t := range matched {
			paths = append(paths, t.Path)
		}
		r.diags = append(r.diags, errAt(e.Range, "%sresource_registry %q: %d candidates match requires %s: %s (they differ on: %s)",
			r.prefix, e.Key, len(matched), req, strings.Join(paths, ", "), strings.Join(differ(matched), ", ")))
	}
	return Entry{}
}

// relevantRequires are the requires keys, sorted, that some candidate
// declares.
func (r *listResolver) relevantRequires(cands []*Template) []string {
	var keys []string
	for k := range r.reg.Requires {
		if slices.ContainsFunc(cands, func(t *Template) bool { _, ok := t.Values[k]; return ok }) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// matching are the candidates that have the requires value of each of keys
// and, where they list resource types, list typ.
func (r *listResolver) matching(typ string, cands []*Template, keys []string) []*Template {
	var matched []*Template
	for _, t := range cands {
		ok := true
		for _, k := range keys {
			ok = ok && t.Has(k, r.reg.Requires[k])
		}
		if types, hasTypes := t.Values[ResourceType]; hasTypes && !slices.Contains(types, typ) {
			ok = false
		}
		if ok {
			matched = append(matched, t)
		}
	}
	return matched
}

// noMatch records why no candidate of e matches: a requires value no
// candidate anywhere declares is kept for one error at that requires entry
// (unresolved); otherwise the error is at e, listing the candidates.
func (r *listResolver) noMatch(e Entry, cands []*Template, keys []string, req string) {
	var typo []string
	for _, k := range keys {
		if !slices.Contains(r.declared[k], r.reg.Requires[k]) {
			typo = append(typo, k)
		}
	}
	if len(typo) > 0 {
		for _, k := range typo {
			r.unresolved[k] = append(r.unresolved[k], e)
		}
		return
	}
	var parts []string
	for _, t := range cands {
		parts = append(parts, t.Path+" "+formatCaps(t))
	}
	r.diags = append(r.diags, errAt(e.Range, "%sresource_registry %q: no candidate matches requires %s; candidates: %s", r.prefix, e.Key, req, strings.Join(parts, ", ")))
}

// Lookup resolves type typ as Heat does, with an exact key before any glob (Heat
// sorts globs first) and the longest glob prefix first: the template path or the
// final type, following aliases.
func (r *Registry) Lookup(typ string) (string, bool) {
	for range 100 {
		e, ok := r.Entries[typ]
		if !ok {
			best := ""
			for k := range r.Entries {
				if p, isGlob := strings.CutSuffix(k, "*"); isGlob && strings.HasPrefix(typ, p) && len(k) > len(best) {
					best = k
				}
			}
			if best == "" {
				return typ, false
			}
			e = r.Entries[best]
		}
		if isTemplatePath(e.Value) || e.Value == typ {
			return e.Value, true
		}
		if _, next := r.Entries[e.Value]; !next {
			return e.Value, true
		}
		typ = e.Value
	}
	return typ, false
}

// aliasCycles reports every cycle of type → type entries once.
func (r *Registry) aliasCycles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	reported := map[string]bool{}
	keys := make([]string, 0, len(r.Entries))
	for k := range r.Entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, start := range keys {
		var chain []string
		seen := map[string]int{}
		for k := start; ; {
			e, ok := r.Entries[k]
			if !ok || isTemplatePath(e.Value) || e.Value == "" {
				break
			}
			if i, loop := seen[k]; loop {
				cycle := append(slices.Clone(chain[i:]), k)
				id := strings.Join(sortedCopy(chain[i:]), ",")
				if !reported[id] {
					reported[id] = true
					diags = append(diags, errAt(r.Entries[cycle[0]].Range, "resource_registry: alias cycle %s", strings.Join(cycle, " -> ")))
				}
				break
			}
			seen[k] = len(chain)
			chain = append(chain, k)
			k = e.Value
		}
	}
	return diags
}

// requiresTypo is the error for requires k: v when no candidate declares v:
// at the requires entry, with the values the candidates do declare.
func requiresTypo(prefix, k, v string, at hcl.Range, declared []string, entries []Entry) *hcl.Diagnostic {
	sum := fmt.Sprintf("%srequires %s: %s matches no candidate template", prefix, k, v)
	if best := loader.Suggest(v, declared); best != "" {
		sum += fmt.Sprintf("; did you mean %q?", best)
	}
	var envs, keys []string
	for _, e := range entries {
		if !slices.Contains(envs, e.Env) {
			envs = append(envs, e.Env)
		}
		keys = append(keys, e.Key)
	}
	sort.Strings(envs)
	sort.Strings(keys)
	d := errAt(at, "%s", sum)
	d.Detail = fmt.Sprintf("The candidates in the resource_registry of %s declare %s: %s. Unresolved because of it: %s.",
		strings.Join(envs, ", "), k, strings.Join(sortedCopy(declared), ", "), strings.Join(keys, ", "))
	return d
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

func sortedResources(m map[string]map[string]Entry) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func errAt(r hcl.Range, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(format, args...), Subject: r.Ptr()}
}

func sortDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	return loader.SortDiagnostics(diags)
}

// formatRequires is {k: v, ...} over keys (all requires when keys is empty).
func formatRequires(req map[string]string, keys []string) string {
	if len(keys) == 0 {
		for k := range req {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+": "+req[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// formatCaps is a template's capabilities but resource_type, {k: v, ...}.
func formatCaps(t *Template) string {
	var parts []string
	for _, k := range t.Keys {
		if k == ResourceType {
			continue
		}
		v := strings.Join(t.Values[k], ", ")
		if t.List[k] {
			v = "[" + v + "]"
		}
		parts = append(parts, k+": "+v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// differ lists the capability keys whose values differ among ts.
func differ(ts []*Template) []string {
	var out []string
	keys := map[string]bool{}
	for _, t := range ts {
		for _, k := range t.Keys {
			keys[k] = true
		}
	}
	for k := range keys {
		if k == ResourceType {
			continue
		}
		first := strings.Join(ts[0].Values[k], ",")
		for _, t := range ts[1:] {
			if strings.Join(t.Values[k], ",") != first {
				out = append(out, k)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
