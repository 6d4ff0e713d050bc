package capabilities

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestParameterDefaults: Heat's merge strategies over three environments (the
// expectations of heat/tests/test_common_env_util.py): lists extended, strings
// concatenated, numbers summed, mappings updated or deep-merged, overwrite by
// default, a strategy sticky from the first file that sets the parameter.
func TestParameterDefaults(t *testing.T) {
	fsys := fstest.MapFS{
		"a.yaml": {Data: []byte(`parameter_merge_strategies:
  default: merge
  Over: overwrite
  Deep: deep_merge
parameter_defaults:
  Lst: [1, 2]
  Str: string1
  Num: 1
  Json: {a: 1, nested: {x: [1], s: p}}
  Deep: {a: 1, nested: {x: [1], s: p}}
  Over: first
`)},
		"b.yaml": {Data: []byte(`parameter_merge_strategies:
  Deep: deep_merge
parameter_defaults:
  Lst: [5, 6]
  Str: string3
  Num: 2
  Json: {b: 2, nested: {y: 2}}
  Over: second
`)},
		"c.yaml": {Data: []byte(`parameter_merge_strategies:
  Deep: deep_merge
parameter_defaults:
  Deep: {nested: {x: [2], s: q}}
  Plain: only
`)},
	}
	reg, diags := resolve(t, fsys, "a.yaml", "b.yaml", "c.yaml")
	if len(diags) > 0 {
		t.Fatalf("%q", diagLines(diags))
	}
	want := map[string]any{
		"Lst":   []any{int64(1), int64(2), int64(5), int64(6)},
		"Str":   "string1string3",
		"Num":   int64(3),
		"Json":  map[string]any{"a": int64(1), "b": int64(2), "nested": map[string]any{"y": int64(2)}},
		"Deep":  map[string]any{"a": int64(1), "nested": map[string]any{"x": []any{int64(1), int64(2)}, "s": "pq"}},
		"Over":  "second",
		"Plain": "only",
	}
	if diff := cmp.Diff(want, reg.ParameterDefaults); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// An explicit strategy contradicting the recorded one is an error.
	fsys["d.yaml"] = &fstest.MapFile{Data: []byte("parameter_merge_strategies:\n  Lst: overwrite\nparameter_defaults:\n  Lst: [9]\n")}
	_, diags = resolve(t, fsys, "a.yaml", "d.yaml")
	if got := diagLines(diags); len(got) != 1 || got[0] != "d.yaml:2:3: Conflicting merge strategy 'overwrite' for parameter 'Lst' in file 'd.yaml'." {
		t.Errorf("conflict: %q", got)
	}
	fsys["e.yaml"] = &fstest.MapFile{Data: []byte("parameter_merge_strategies:\n  default: melt\n")}
	_, diags = resolve(t, fsys, "e.yaml")
	if got := diagLines(diags); len(got) != 1 || got[0] != `e.yaml:2:12: parameter_merge_strategies "default": "melt" is not a strategy (overwrite, merge or deep_merge)` {
		t.Errorf("a bad strategy: %q", got)
	}
}
