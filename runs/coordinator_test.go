package runs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// exampleSet renders an example repository into an artifact set.
func exampleSet(t *testing.T, name string) fstest.MapFS {
	t.Helper()
	repo, diags := loader.Load(os.DirFS(filepath.Join("..", "examples", name)), loader.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rs, diags := render.Render(repo, render.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	files, err := render.Files(rs, "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	for n, d := range files {
		fsys[n] = &fstest.MapFile{Data: d}
	}
	return fsys
}

// claimedDir is a work directory fuelsync would claim: its marker is there.
func claimedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, state.MarkerName), []byte("fuelsync work directory, format 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// agents runs an agent per node against c until ctx ends: each takes its
// next task and reports it succeeded, unless fail says otherwise; the
// starts and ends are recorded in order.
type agents struct {
	mu     sync.Mutex
	starts []string // task@node, in the order they were given
	ends   map[string]int
}

func (a *agents) run(ctx context.Context, t *testing.T, c *Coordinator, cluster string, nodes []string, fail func(node, task string) bool) *sync.WaitGroup {
	var wg sync.WaitGroup
	a.ends = map[string]int{}
	for _, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				as, err := c.Next(ctx, cluster, node, time.Second)
				if err != nil || as == nil {
					continue
				}
				a.mu.Lock()
				a.starts = append(a.starts, as.Task.ID+"@"+node)
				a.mu.Unlock()
				st := api.TaskSucceeded
				if fail != nil && fail(node, as.Task.ID) {
					st = api.TaskFailed
				}
				_, err = c.Report(ctx, cluster, node, as.Run, &api.TaskReport{Task: as.Task.ID, Attempt: as.Attempt, Status: st, Output: "out of " + as.Task.ID})
				if err != nil && ctx.Err() == nil {
					t.Errorf("report %s@%s: %v", as.Task.ID, node, err)
				}
				a.mu.Lock()
				a.ends[as.Task.ID+"@"+node] = len(a.starts)
				a.mu.Unlock()
			}
		}()
	}
	return &wg
}

func TestCoordinatorRunsAndResumes(t *testing.T) {
	set := exampleSet(t, "quickstart")
	store := &Workdir{Dir: claimedDir(t)}
	ended := make(chan *Summary, 1)
	var doneNodes sync.Map
	newCoord := func() *Coordinator {
		return &Coordinator{Store: store, OnEnd: func(h *Header, s *Summary) { ended <- s },
			OnNodeDone: func(h *Header, node string, failed bool, tasks []api.RunTask) { doneNodes.Store(node, len(tasks)) }}
	}
	ctx1, cancel1 := context.WithCancel(context.Background())
	c1 := newCoord()
	if err := c1.Resume(ctx1); err != nil {
		t.Fatal(err)
	}
	h, err := c1.Start(ctx1, StartRequest{Cluster: "demo", Graph: "default", Serial: 1, Set: set, Trigger: "request"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Start(ctx1, StartRequest{Cluster: "demo", Graph: "default", Serial: 1, Set: set}); err == nil {
		t.Fatal("a second run of a busy cluster started")
	}
	nodes := []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"}
	// node-1 alone runs its first tasks, then serve goes away.
	a := &agents{}
	actx, acancel := context.WithCancel(ctx1)
	for range 2 {
		as, err := c1.Next(actx, "demo", "node-1", time.Second)
		if err != nil || as == nil {
			t.Fatalf("node-1: %v %v", as, err)
		}
		if _, err := c1.Report(actx, "demo", "node-1", as.Run, &api.TaskReport{Task: as.Task.ID, Attempt: as.Attempt, Status: api.TaskSucceeded}); err != nil {
			t.Fatal(err)
		}
		a.starts = append(a.starts, as.Task.ID+"@node-1")
	}
	acancel()
	cancel1()
	c1.Shutdown()

	// A new coordinator resumes the run from the store.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	c2 := newCoord()
	if err := c2.Resume(ctx2); err != nil {
		t.Fatal(err)
	}
	wg := a.run(ctx2, t, c2, "demo", nodes, nil)
	var sum *Summary
	select {
	case sum = <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	cancel2()
	wg.Wait()
	if sum.Failed || sum.Counts["failed"]+sum.Counts["dep_failed"] > 0 {
		t.Errorf("summary %+v", sum)
	}
	// Nothing ran twice, and every task started after its requirements.
	rec, err := store.Read(context.Background(), "demo", h.ID)
	if err != nil {
		t.Fatal(err)
	}
	g, err := GraphOf(rec.Snapshot, "demo", "default")
	if err != nil {
		t.Fatal(err)
	}
	checkOrder(t, g, rec.Events)
	for _, n := range nodes {
		if _, ok := doneNodes.Load(n); !ok {
			t.Errorf("node %s was not told done", n)
		}
	}
	r, err := c2.Run(context.Background(), "demo", "latest", api.TasksAll)
	if err != nil || r.Status != api.RunSucceeded || len(r.Nodes) == 0 {
		t.Errorf("run view: %+v %v", r, err)
	}
}

// checkOrder checks a run's log: every task of the run is dispatched once,
// after every requirement (not a no-op) finished, and no no-op is dispatched.
func checkOrder(t *testing.T, g *Graph, events []Event) {
	t.Helper()
	dispatched, finished := map[string]int{}, map[string]int{}
	for i, ev := range events {
		name := ev.Task + "@" + ev.Node
		switch ev.Kind {
		case KindDispatch:
			if _, dup := dispatched[name]; dup {
				t.Errorf("%s dispatched twice", name)
			}
			dispatched[name] = i
			tk, _ := g.Task(ev.Node, ev.Task)
			if g.Tasks[tk].Noop {
				t.Errorf("no-op %s was given to an agent", name)
			}
			for _, r := range g.Requires(tk) {
				if j, ok := finished[g.Name(r)]; !g.Tasks[r].Noop && (!ok || j > i) {
					t.Errorf("%s started before its requirement %s finished", name, g.Name(r))
				}
			}
		case KindFinish:
			finished[name] = i
		}
	}
	for ti, tk := range g.Tasks {
		if _, ok := dispatched[g.Name(int32(ti))]; !ok && !tk.Noop {
			t.Errorf("%s never started", g.Name(int32(ti)))
		}
	}
}

// claimedDirExt is claimedDir for the package's external tests.

// TestCoordinatorLatest: Latest is a cluster's newest run (nil before any),
// running then ended, and read from the store by a coordinator that did not
// run it; OnStart is told of a run started, once.
func TestCoordinatorLatest(t *testing.T) {
	set := exampleSet(t, "quickstart")
	store := &Workdir{Dir: claimedDir(t)}
	ended := make(chan *Summary, 1)
	var startedRuns []string
	c := &Coordinator{Store: store, OnEnd: func(h *Header, s *Summary) { ended <- s },
		OnStart: func(h *Header) { startedRuns = append(startedRuns, h.ID) }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Latest(ctx, "demo"); r != nil || err != nil {
		t.Fatalf("before any run: %+v %v", r, err)
	}
	h, err := c.Start(ctx, StartRequest{Cluster: "demo", Graph: "default", Serial: 1, Set: set, Trigger: "request"})
	if err != nil {
		t.Fatal(err)
	}
	if len(startedRuns) != 1 || startedRuns[0] != h.ID {
		t.Errorf("OnStart told of %v, want [%s]", startedRuns, h.ID)
	}
	if r, err := c.Latest(ctx, "demo"); err != nil || r == nil || r.ID != h.ID || r.Status != api.RunRunning || r.Counts["pending"] == 0 {
		t.Fatalf("while it runs: %+v %v", r, err)
	}
	a := &agents{}
	wg := a.run(ctx, t, c, "demo", []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"}, nil)
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	cancel()
	wg.Wait()
	if r, err := c.Latest(context.Background(), "demo"); err != nil || r == nil || r.ID != h.ID || r.Status != api.RunSucceeded || r.Ended == nil {
		t.Errorf("once ended: %+v %v", r, err)
	}
	other := &Coordinator{Store: store}
	if r, err := other.Latest(context.Background(), "demo"); err != nil || r == nil || r.ID != h.ID || r.Status != api.RunSucceeded {
		t.Errorf("read from the store: %+v %v", r, err)
	}
	if len(startedRuns) != 1 {
		t.Errorf("OnStart told %d times", len(startedRuns))
	}
}

// slowEnd is a store whose End waits until release is closed: the moment
// between a run's view showing it ended and its summary being stored.
type slowEnd struct {
	Store
	ending  chan struct{} // closed when End is called
	release chan struct{}
}

func (s *slowEnd) End(ctx context.Context, cluster, id string, sum *Summary) error {
	close(s.ending)
	<-s.release
	return s.Store.End(ctx, cluster, id, sum)
}

// TestCoordinatorRetryAsTheRunEnds: a retry asked while the run runs is
// refused (ErrBusy); asked once its view shows it ended, before its summary
// is stored, it waits for the summary and starts, rather than being refused.
func TestCoordinatorRetryAsTheRunEnds(t *testing.T) {
	set := exampleSet(t, "quickstart")
	store := &slowEnd{Store: &Workdir{Dir: claimedDir(t)}, ending: make(chan struct{}), release: make(chan struct{})}
	c := &Coordinator{Store: store}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := c.Start(ctx, StartRequest{Cluster: "demo", Graph: "default", Serial: 1, Set: set, Trigger: "request"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Retry(ctx, "demo", nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("a retry while the run runs: %v, want ErrBusy", err)
	}
	a := &agents{}
	wg := a.run(ctx, t, c, "demo", []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"},
		func(node, task string) bool { return node == "node-4" })
	select {
	case <-store.ending:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	if r, err := c.Latest(ctx, "demo"); err != nil || r == nil || r.Status != api.RunFailed {
		t.Fatalf("the run's view before its summary is stored: %+v %v, want failed", r, err)
	}
	// It waits for the summary: with nothing left of its time, it says so
	// rather than that the run is busy.
	done, stop := context.WithCancel(ctx)
	stop()
	if _, err := c.Retry(done, "demo", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a retry out of time as the run ends: %v, want context.Canceled", err)
	}
	// Not stored within endWait: refused, the run still not ended.
	defer func(w time.Duration) { endWait = w }(endWait)
	endWait = time.Millisecond
	if _, err := c.Retry(ctx, "demo", nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("a retry whose run's summary is not stored in time: %v, want ErrBusy", err)
	}
	endWait = time.Minute
	retried := make(chan error, 1)
	go func() {
		_, err := c.Retry(ctx, "demo", nil)
		retried <- err
	}()
	close(store.release)
	if err := <-retried; err != nil {
		t.Fatalf("a retry as the run ends: %v", err)
	}
	cancel()
	wg.Wait()
	list, err := store.List(context.Background(), "demo")
	if err != nil || len(list) != 2 || list[1].Header.ID != h.ID || list[0].Header.RetryOf != h.ID {
		t.Fatalf("runs after the retry: %v %v, want the retry of %s", list, err, h.ID)
	}
}
