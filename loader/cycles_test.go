package loader

import (
	"slices"
	"testing"
)

// TestDependencyCycles: each cycle of depends_on is an error, once, at the
// entry that closes it; a chain, a dependency on itself or on a cluster the
// repository lacks makes none here.
func TestDependencyCycles(t *testing.T) {
	for _, tc := range []struct {
		name string
		deps map[string][]string // in file order a, b, c, d
		want []string
	}{
		{"none", nil, nil},
		{"a chain", map[string][]string{"a": {"b"}, "b": {"c"}}, nil},
		{"a diamond", map[string][]string{"a": {"b", "c"}, "b": {"d"}, "c": {"d"}}, nil},
		{"itself", map[string][]string{"a": {"a"}}, nil},
		{"a missing cluster", map[string][]string{"a": {"z"}}, nil},
		{"two", map[string][]string{"a": {"b"}, "b": {"a"}}, []string{"cluster b: depends_on makes a cycle: b -> a -> b"}},
		{"three", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}, []string{"cluster c: depends_on makes a cycle: c -> a -> b -> c"}},
		{"two cycles", map[string][]string{"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}},
			[]string{"cluster b: depends_on makes a cycle: b -> a -> b", "cluster d: depends_on makes a cycle: d -> c -> d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := &Repo{}
			for _, name := range []string{"a", "b", "c", "d"} {
				c := &Cluster{Name: name}
				for _, d := range tc.deps[name] {
					c.DependsOn = append(c.DependsOn, Dependency{Cluster: d})
				}
				repo.Clusters = append(repo.Clusters, c)
			}
			var got []string
			for _, d := range dependencyCycles(repo) {
				got = append(got, d.Summary)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}
