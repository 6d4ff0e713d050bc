package capabilities

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// Strategies are Heat's parameter merge strategies (heat/common/environment_util.py).
var Strategies = []string{"overwrite", "merge", "deep_merge"}

// paramEntry is one parameter_defaults value of an environment.
type paramEntry struct {
	Key   string
	Value any
	Range hcl.Range
}

// parseParams reads parameter_defaults and parameter_merge_strategies.
func (env *Environment) parseParams(sec loader.Field, bad func(hcl.Range, string, ...any)) {
	switch sec.Key {
	case "parameter_defaults":
		if !sec.Value.IsMap() {
			bad(sec.Value.Range, "parameter_defaults maps parameter names to values")
			return
		}
		for _, f := range sec.Value.Fields {
			env.params = append(env.params, paramEntry{f.Key, f.Value.Interface(), f.KeyRange})
		}
	case "parameter_merge_strategies":
		if !sec.Value.IsMap() {
			bad(sec.Value.Range, "parameter_merge_strategies maps parameter names (or default) to a strategy")
			return
		}
		for _, f := range sec.Value.Fields {
			s, ok := f.Value.Str()
			if !ok || !slices.Contains(Strategies, s) {
				bad(f.Value.Range, "parameter_merge_strategies %q: %q is not a strategy (overwrite, merge or deep_merge)", f.Key, f.Value.Text)
				continue
			}
			env.strategies[f.Key] = s
			env.strategyRanges[f.Key] = f.KeyRange
		}
	}
}

// mergeParams merges the environments' parameter_defaults in order with Heat's
// strategies: a parameter's strategy is its file's explicit one, else the one
// recorded by the first file that set it, else the file's default, else
// overwrite; an explicit strategy that contradicts the recorded one is an error.
func mergeParams(envs []*Environment) (map[string]any, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	out := map[string]any{}
	recorded := map[string]string{}
	for _, env := range envs {
		for _, p := range env.params {
			explicit := env.strategies[p.Key]
			if explicit != "" && recorded[p.Key] != "" && explicit != recorded[p.Key] {
				diags = append(diags, errAt(env.strategyRanges[p.Key], "Conflicting merge strategy '%s' for parameter '%s' in file '%s'.", explicit, p.Key, env.Path))
				continue
			}
			strategy := explicit
			if strategy == "" {
				strategy = recorded[p.Key]
			}
			if strategy == "" {
				strategy = env.strategies["default"]
			}
			if strategy == "" {
				strategy = "overwrite"
			}
			old, had := out[p.Key]
			if !had {
				out[p.Key] = p.Value
				recorded[p.Key] = strategy
				continue
			}
			if recorded[p.Key] == "" {
				recorded[p.Key] = strategy
			}
			v, err := mergeValue(old, p.Value, strategy)
			if err != nil {
				diags = append(diags, errAt(p.Range, "parameter_defaults %q: %v", p.Key, err))
				continue
			}
			out[p.Key] = v
		}
	}
	return out, diags
}

// mergeValue merges new into old: overwrite replaces; merge updates a mapping,
// extends a list, concatenates a string and sums a number; deep_merge merges
// mappings recursively (nested lists extended, nested strings concatenated).
func mergeValue(old, new any, strategy string) (any, error) {
	if strategy == "overwrite" {
		return new, nil
	}
	switch o := old.(type) {
	case map[string]any:
		n, ok := new.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("cannot %s a %T into a mapping", strategy, new)
		}
		out := maps.Clone(o)
		for k, v := range n {
			if prev, ok := out[k]; ok && strategy == "deep_merge" {
				merged, err := mergeValue(prev, v, "deep_merge")
				if err != nil {
					return nil, err
				}
				out[k] = merged
				continue
			}
			out[k] = v
		}
		return out, nil
	case []any:
		n, ok := new.([]any)
		if !ok {
			return nil, fmt.Errorf("cannot %s a %T into a list", strategy, new)
		}
		return append(slices.Clone(o), n...), nil
	case string:
		n, ok := new.(string)
		if !ok {
			return nil, fmt.Errorf("cannot %s a %T into a string", strategy, new)
		}
		return o + n, nil
	case int64:
		switch n := new.(type) {
		case int64:
			return o + n, nil
		case float64:
			return float64(o) + n, nil
		}
	case float64:
		switch n := new.(type) {
		case int64:
			return o + float64(n), nil
		case float64:
			return o + n, nil
		}
	case nil:
		return new, nil
	}
	if strategy == "deep_merge" && fmt.Sprintf("%T", old) != fmt.Sprintf("%T", new) {
		return new, nil // a nested scalar of another type: replaced
	}
	return nil, fmt.Errorf("no %s for a %T", strategy, old)
}
