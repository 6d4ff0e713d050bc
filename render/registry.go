package render

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/capabilities"
	"github.com/fuelsync/fuelsync/loader"
)

// resolveRegistry merges the cluster's Heat environments (`environments:` in
// order, then its own `requires:` and `resource_registry:` as a last one) and
// resolves the registry's lists by `requires`. nil when the cluster
// uses none of them.
func resolveRegistry(repo *loader.Repo, cl *loader.Cluster) (*capabilities.Registry, hcl.Diagnostics) {
	if len(cl.Environments) == 0 && cl.Requires == nil && cl.ResourceRegistry == nil {
		return nil, nil
	}
	if repo.FS == nil {
		return nil, nil
	}
	var diags hcl.Diagnostics
	var envs []*capabilities.Environment
	dir := path.Dir(cl.File)
	for _, ref := range cl.Environments {
		p := path.Join(dir, ref.Name)
		if path.IsAbs(ref.Name) || p == ".." || strings.HasPrefix(p, "../") {
			diags = append(diags, errorAt(ref.Range, "cluster %s: environment %q leaves the repository", cl.Name, ref.Name))
			continue
		}
		src, err := fs.ReadFile(repo.FS, p)
		if err != nil {
			diags = append(diags, errorAt(ref.Range, "cluster %s: environment %s: %v", cl.Name, p, unwrapPathError(err)))
			continue
		}
		repo.Sources.Add(p, src)
		env, d := capabilities.ParseEnvironment(p, src)
		diags = append(diags, d...)
		if env != nil {
			envs = append(envs, env)
		}
	}
	inline := &loader.Value{Kind: loader.KindMap}
	if cl.Requires != nil {
		inline.Fields = append(inline.Fields, loader.Field{Key: "requires", Value: cl.Requires, KeyRange: cl.Requires.Range})
	}
	if cl.ResourceRegistry != nil {
		inline.Fields = append(inline.Fields, loader.Field{Key: "resource_registry", Value: cl.ResourceRegistry, KeyRange: cl.ResourceRegistry.Range})
	}
	if len(inline.Fields) > 0 {
		env, d := capabilities.EnvironmentFromValue(cl.File, inline)
		diags = append(diags, d...)
		envs = append(envs, env)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	reg, d := capabilities.ResolveFor(repo.FS, envs, "cluster "+cl.Name)
	return reg, append(diags, d...)
}

func unwrapPathError(err error) string {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}

// registryDoc is <cluster>/registry.yaml: the resolved registry (type → template
// or type), the per-resource overrides and the requires it was resolved with.
func registryDoc(reg *capabilities.Registry) map[string]any {
	entries := map[string]any{}
	for k, e := range reg.Entries {
		entries[k] = e.Value
	}
	resources := map[string]any{}
	for name, m := range reg.Resources {
		r := map[string]any{}
		for k, e := range m {
			r[k] = e.Value
		}
		resources[name] = r
	}
	requires := map[string]any{}
	for k, v := range reg.Requires {
		requires[k] = v
	}
	return map[string]any{"resource_registry": entries, "resources": resources, "requires": requires, "parameter_defaults": reg.ParameterDefaults}
}

// RegistryChanges lists the keys whose value differs between two registries
// (old nil: everything is new), as "K: old -> new", sorted.
func RegistryChanges(old, new map[string]string) []string {
	var out []string
	for k, v := range new {
		if o, ok := old[k]; !ok {
			out = append(out, fmt.Sprintf("%s: + %s", k, v))
		} else if o != v {
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, o, v))
		}
	}
	for k, o := range old {
		if _, ok := new[k]; !ok {
			out = append(out, fmt.Sprintf("%s: - %s", k, o))
		}
	}
	sort.Strings(out)
	return out
}
