package render

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
)

// renderAll resolves the graphs of every model, one job per cluster and graph type
// on GOMAXPROCS goroutines, largest clusters first. The result and the diagnostics
// are in model order, then graph type order, whatever the scheduling.
//
// With classes set it only checks: each graph is resolved onto one node per class
// of nodes (no graph is returned), and again onto every node only when that
// reports a dependency cycle, so that the cycle reported is one of the nodes.
func renderAll(models []*Model, classes bool) ([][]*Graph, hcl.Diagnostics) {
	graphs, each := renderEach(models, classes)
	var all hcl.Diagnostics
	for _, d := range each {
		all = append(all, d...)
	}
	return graphs, all
}

// renderEach is renderAll with the diagnostics of each model apart.
func renderEach(models []*Model, classes bool) ([][]*Graph, []hcl.Diagnostics) {
	type job struct {
		model, graph int
		typ          string
		weight       int
	}
	var jobs []job
	graphs := make([][]*Graph, len(models))
	for i, m := range models {
		types := m.graphTypes()
		graphs[i] = make([]*Graph, len(types))
		for j, typ := range types {
			w := len(m.Cluster.Nodes)
			if typ == "default" {
				w *= 4 // the default graph holds most tasks
			}
			jobs = append(jobs, job{model: i, graph: j, typ: typ, weight: w})
		}
	}
	// Heaviest first, so that the last job to finish is a small one.
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(jobs[b].weight, jobs[a].weight) })
	diags := make([]hcl.Diagnostics, len(jobs))
	inParallel(len(order), func(_, k int) {
		jb := jobs[order[k]]
		m := models[jb.model]
		if !classes {
			graphs[jb.model][jb.graph], diags[order[k]] = m.renderGraph(jb.typ, false)
			return
		}
		g, d := m.renderGraph(jb.typ, true)
		if g.cycles {
			_, d = m.renderGraph(jb.typ, false)
		}
		diags[order[k]] = d
	})
	each := make([]hcl.Diagnostics, len(models))
	for k, d := range diags {
		each[jobs[k].model] = append(each[jobs[k].model], d...)
	}
	return graphs, each
}

// workers is the number of goroutines inParallel uses for n items.
func workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }

// inParallel calls fn(w, i) for every i in [0, n), in order of i, on workers(n)
// goroutines; w (< workers(n)) numbers the goroutine, for per-goroutine state.
func inParallel(n int, fn func(w, i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers(n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(w, i)
			}
		})
	}
	wg.Wait()
}
