package render

// stronglyConnected computes the strongly connected components of a graph of n vertices
// with Tarjan's algorithm, iteratively (a deep graph must not exhaust the stack).
// Roots are tried in the order given (all vertices when nil); succ(v, i) is v's
// i-th successor, -1 to pass over it, and ok false past the last. emit receives
// each component as it completes: successors' components before their
// predecessors'. The members slice is reused after emit returns.
func stronglyConnected(n int, roots []int32, succ func(v int32, i int) (w int32, ok bool), emit func(members []int32)) {
	index := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack, members []int32
	type frame struct{ v, next int32 }
	var call []frame
	counter := int32(0)
	visit := func(w int32) {
		index[w], low[w] = counter, counter
		counter++
		stack = append(stack, w)
		onStack[w] = true
		call = append(call, frame{v: w})
	}
	run := func(root int32) {
		if index[root] >= 0 {
			return
		}
		visit(root)
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if w, ok := succ(v, int(f.next)); ok {
				f.next++
				switch {
				case w < 0:
				case index[w] < 0:
					visit(w)
				case onStack[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == index[v] {
				members = members[:0]
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					members = append(members, w)
					if w == v {
						break
					}
				}
				emit(members)
			}
		}
	}
	if roots == nil {
		for v := range n {
			run(int32(v))
		}
		return
	}
	for _, r := range roots {
		run(r)
	}
}
