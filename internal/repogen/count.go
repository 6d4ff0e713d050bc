package repogen

import "github.com/fuelsync/fuelsync/loader"

// Count returns what a loaded repository holds in the terms of a Spec: plugins,
// tasks (every graph of every plugin and of the releases they define), nodes and
// clusters, so tests and benchmarks can check a generated repository loads whole.
func Count(repo *loader.Repo, seed int64) Spec {
	s := Spec{Plugins: len(repo.Plugins), Clusters: len(repo.Clusters), Seed: seed}
	for _, p := range repo.Plugins {
		for _, g := range p.Graphs {
			s.Tasks += len(g.Tasks)
		}
		for _, r := range p.Defines {
			for _, g := range r.Graphs {
				s.Tasks += len(g.Tasks)
			}
		}
	}
	for _, c := range repo.Clusters {
		s.Nodes += len(c.Nodes)
	}
	return s
}
