//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/state"
)

// TestApplyCrashSafety kills `fuelsync apply` with SIGKILL at random moments
// and at every step of its commit sequence, over 200 times in all; after each
// kill the state parses, the current set is complete and matches it (the old set
// or the new one, never a mix), and the next plan works.
func TestApplyCrashSafety(t *testing.T) {
	requireTestHooks(t)
	if testing.Short() {
		t.Skip("kills over 200 applies")
	}
	var random, steps int
	straced := false
	t.Run("random moments", func(t *testing.T) { random = crashAtRandomMoments(t) })
	t.Run("every step", func(t *testing.T) { steps, straced = crashAtEveryStep(t) })
	t.Logf("%d kills at random moments, %d at steps and system calls", random, steps)
	want := 200
	if !straced {
		want = 150 // the kills under strace are skipped
	}
	if !t.Failed() && random+steps < want {
		t.Errorf("only %d kills in all, want at least %d", random+steps, want)
	}
}

// crashAtRandomMoments kills `fuelsync apply` with SIGKILL at random moments, 40
// times or more (until enough kills land inside an apply, some of them while
// it writes a set), and returns how many applies it killed. Even rounds draw
// the moment from the whole apply; odd rounds from the write of its set,
// counted from the moment the temporary set appears (an inotify event): that
// write is a few milliseconds of an apply's 200, and moments drawn from the
// whole apply alone may all miss it.
func crashAtRandomMoments(t *testing.T) int {
	repo, clusterFile, a, b := applyRepoSpec(t, repogen.Spec{Plugins: 2, Tasks: 100, Nodes: 12, Clusters: 1, Seed: 5})
	wd := filepath.Join(t.TempDir(), "wd")
	if out, err := fuelsyncCmd("--repo", repo, "--workdir", wd, "-q", "apply", "--auto-approve").CombinedOutput(); err != nil {
		t.Fatalf("first apply: %v\n%s", err, out)
	}
	// The moments are drawn from the times of an apply like the ones killed:
	// a change of the cluster file over an applied set (a first apply writes
	// every object, and takes longer).
	if err := os.WriteFile(clusterFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	full, write := timeApply(t, repo, wd)
	t.Logf("one apply takes %v, writing its set %v", full, write)
	seed := uint64(time.Now().UnixNano())
	rnd := rand.New(rand.NewPCG(seed, 1))
	var killed, completed, midPublish int
	serial := checkWorkdir(t, wd).Serial
	applied := b
	// At least 40 rounds, and more (up to 120) until enough kills landed inside
	// an apply: how long an apply takes varies with the machine's load. Each
	// round applies the variant not applied, so that every apply has a set to
	// write.
	rounds := 0
	for i := 0; i < 120 && (i < 40 || killed < 12 || midPublish == 0); i++ {
		rounds++
		variant := a
		if bytes.Equal(applied, a) {
			variant = b
		}
		if err := os.WriteFile(clusterFile, variant, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := fuelsyncCmd("--repo", repo, "--workdir", wd, "-q", "apply", "--auto-approve")
		var err error
		if i%2 == 0 {
			err = killAfter(t, cmd, nil, rnd.Int64N(int64(full)*6/5))
		} else {
			events, stop := tempSets(t, wd)
			err = killAfter(t, cmd, events, rnd.Int64N(int64(write)*6/5+1))
			stop()
		}
		killedNow := false
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
			killedNow = true
			if leftovers, _ := filepath.Glob(filepath.Join(wd, "artifacts", ".tmp-*")); len(leftovers) > 0 {
				midPublish++
			}
		} else if err != nil {
			t.Fatalf("round %d (seed %d): apply failed: %v", i, seed, err)
		}
		st := checkWorkdir(t, wd)
		if killedNow {
			checkAfterKill(t, fmt.Sprintf("round %d (seed %d)", i, seed), repo, wd, serial, false)
		}
		if st.Serial != serial {
			completed++
			serial, applied = st.Serial, variant
		}
	}
	t.Logf("seed %d: %d of %d applies killed (%d while writing a set), %d serials published", seed, killed, rounds, midPublish, completed)
	if killed < 12 || midPublish == 0 {
		t.Errorf("the kills did not land inside applies often enough to test anything (killed %d, while writing %d)", killed, midPublish)
	}
	// The next apply recovers: it removes what the killed runs left behind.
	if out, err := fuelsyncCmd("--repo", repo, "--workdir", wd, "-q", "apply", "--auto-approve").CombinedOutput(); err != nil {
		t.Fatalf("apply after the kills: %v\n%s", err, out)
	}
	checkWorkdir(t, wd)
	if leftovers, _ := filepath.Glob(filepath.Join(wd, "artifacts", ".tmp-*")); len(leftovers) > 0 {
		t.Errorf("temporary sets left after a complete apply: %v", leftovers)
	}
	if sets, _ := filepath.Glob(filepath.Join(wd, "artifacts", "[0-9]*")); len(sets) > state.Keep {
		t.Errorf("%d sets kept, want at most %d", len(sets), state.Keep)
	}
	return killed
}

// timeApply runs one apply to its end and returns how long it took, and how
// long its temporary set existed (from its creation to its rename, as inotify
// reports them).
func timeApply(t *testing.T, repo, wd string) (full, write time.Duration) {
	t.Helper()
	events, stop := tempSets(t, wd)
	defer stop()
	start := time.Now()
	if out, err := fuelsyncCmd("--repo", repo, "--workdir", wd, "-q", "apply", "--auto-approve").CombinedOutput(); err != nil {
		t.Fatalf("timed apply: %v\n%s", err, out)
	}
	full = time.Since(start)
	// The apply has ended: inotify has queued its events.
	var at [2]time.Time // created, renamed
	timeout := time.After(30 * time.Second)
	for i := range at {
		select {
		case at[i] = <-events:
		case <-timeout:
		}
		if at[i].IsZero() {
			t.Fatalf("inotify did not see the apply's temporary set created and renamed")
		}
	}
	return full, at[1].Sub(at[0])
}

// tempSets watches the work directory's artifacts/ for a temporary set: it
// sends the time the first one is created, then the time it is renamed or
// removed, and stops watching; stop ends the watch before that (the channel
// then gives zero times).
func tempSets(t *testing.T, wd string) (events <-chan time.Time, stop func()) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(filepath.Join(wd, "artifacts")); err != nil {
		w.Close()
		t.Fatal(err)
	}
	out := make(chan time.Time, 2)
	go func() {
		defer w.Close()
		defer close(out)
		name := ""
		for ev := range w.Events {
			base := filepath.Base(ev.Name)
			switch {
			case name == "" && ev.Has(fsnotify.Create) && strings.HasPrefix(base, ".tmp-"):
				name = ev.Name
				out <- time.Now()
			case name != "" && ev.Name == name && (ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove)):
				out <- time.Now()
				return
			}
		}
	}()
	return out, func() { w.Close() }
}

// killAfter starts cmd and kills it with SIGKILL delay nanoseconds after its
// start, or, given events (tempSets), after the temporary set appears; an
// apply that ends first is not killed. It returns cmd's Wait.
func killAfter(t *testing.T, cmd *exec.Cmd, events <-chan time.Time, delay int64) error {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if events != nil {
		select {
		case <-events:
		case err := <-done:
			return err
		}
	}
	select {
	case <-time.After(time.Duration(delay)):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		return <-done
	case err := <-done:
		return err
	}
}

// TestApplyLock runs two applies at once, 20 times: one takes the lock, the other
// fails at once naming it (the pid of the other process), or, with
// --lock-timeout (every fourth round), waits and then runs; the state is never
// corrupt. On a loaded machine the two may not overlap (both succeed, one
// after the other): that must stay the exception, a third of the rounds at
// most.
func TestApplyLock(t *testing.T) {
	if testing.Short() {
		t.Skip("races 40 applies")
	}
	repo, clusterFile, a, b := applyRepo(t)
	wd := filepath.Join(t.TempDir(), "wd")
	apart := 0 // rounds whose applies did not overlap
	for i := range 20 {
		variant := a
		if i%2 == 0 {
			variant = b
		}
		if err := os.WriteFile(clusterFile, variant, 0o644); err != nil {
			t.Fatal(err)
		}
		wait := i%4 == 3 // every fourth round, both wait for the lock
		args := []string{"--repo", repo, "--workdir", wd, "-q", "apply", "--auto-approve"}
		if wait {
			args = append(args, "--lock-timeout", "60s")
		}
		cmds := [2]*exec.Cmd{fuelsyncCmd(args...), fuelsyncCmd(args...)}
		var stderr [2]bytes.Buffer
		var errs [2]error
		var wg sync.WaitGroup
		for k, cmd := range cmds {
			cmd.Stderr = &stderr[k]
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
		}
		for k, cmd := range cmds {
			wg.Go(func() { errs[k] = cmd.Wait() })
		}
		wg.Wait()
		switch {
		case wait:
			if errs[0] != nil || errs[1] != nil {
				t.Fatalf("round %d: the waiting apply: %v %s / %v %s", i, errs[0], &stderr[0], errs[1], &stderr[1])
			}
		case errs[0] == nil && errs[1] == nil:
			apart++ // one ran after the other
		case (errs[0] == nil) == (errs[1] == nil):
			t.Fatalf("round %d: want one apply to fail on the lock; got %v %s / %v %s", i, errs[0], &stderr[0], errs[1], &stderr[1])
		default:
			loser := 0
			if errs[0] == nil {
				loser = 1
			}
			holder := cmds[1-loser].Process.Pid
			msg := stderr[loser].String()
			if !strings.Contains(msg, fmt.Sprintf("locked by pid %d (apply,", holder)) {
				t.Fatalf("round %d: the failing apply does not name the holder (pid %d): %s", i, holder, msg)
			}
		}
		checkWorkdir(t, wd)
	}
	if apart > 5 {
		t.Errorf("in %d of 15 rounds both applies succeeded: they did not race for the lock", apart)
	}
}

// openPTY opens a pseudo-terminal: the master side, and the slave side a process
// gets as its terminal stdin. It skips the test where there is none.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testenv.Unavailable(t, "no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		testenv.Unavailable(t, "unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		testenv.Unavailable(t, "naming the pseudo-terminal: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		testenv.Unavailable(t, "opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave
}

// TestApplyAsksForConfirmation runs apply without a plan file: on a terminal
// (a real pseudo-terminal) it shows the plan and applies only on "yes"; with
// stdin not a terminal, or JSON output, it refuses without --auto-approve; a saved
// plan and --auto-approve are never asked about. Nothing is applied when refused.
func TestApplyAsksForConfirmation(t *testing.T) {
	repo, err := filepath.Abs(filepath.Join("..", "..", "examples", "quickstart"))
	if err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(t.TempDir(), "wd")
	applied := func() int64 {
		t.Helper()
		st, err := state.Open(wd).ReadState()
		if err != nil {
			t.Fatal(err)
		}
		return st.Serial
	}
	apply := func(stdin *os.File, args ...string) (stdout, stderr string, err error) {
		cmd := fuelsyncCmd(append([]string{"--repo", repo, "--workdir", wd, "apply"}, args...)...)
		cmd.Stdin = stdin
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err = cmd.Run()
		return o.String(), e.String(), err
	}

	// stdin not a terminal (/dev/null), text or JSON output: an error.
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	for _, args := range [][]string{nil, {"--format", "json"}} {
		_, stderr, err := apply(devnull, args...)
		want := "apply without a plan file asks for confirmation, and stdin is not a terminal: pass --auto-approve"
		if args != nil {
			want = "apply without a plan file asks for confirmation, and the output is json: pass --auto-approve"
		}
		if err == nil || !strings.Contains(stderr, want) {
			t.Errorf("apply %v with stdin /dev/null: %v, stderr:\n%s\nwant %q", args, err, stderr, want)
		}
	}
	if n := applied(); n != 0 {
		t.Fatalf("serial %d applied without confirmation", n)
	}

	// On a terminal: the plan, the question; anything but "yes" cancels.
	master, slave := openPTY(t)
	for _, answer := range []string{"no\n", "y\n", "\n"} {
		if _, err := master.WriteString(answer); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, err := apply(slave)
		if err == nil || !strings.Contains(stderr, "apply cancelled; nothing was changed") {
			t.Errorf("answer %q: %v, stderr:\n%s", answer, err, stderr)
		}
		if !strings.Contains(stdout, "+ node-1 (controller): provision + deploy") || !strings.Contains(stdout, "Apply these changes to "+wd+"? Only 'yes' is accepted: ") {
			t.Errorf("answer %q: the plan and the question are not shown:\n%s", answer, stdout)
		}
	}
	if n := applied(); n != 0 {
		t.Fatalf("serial %d applied without a yes", n)
	}
	if _, err := master.WriteString("yes\n"); err != nil {
		t.Fatal(err)
	}
	// -q still shows the plan asked about.
	cmd := fuelsyncCmd("--repo", repo, "--workdir", wd, "-q", "apply")
	cmd.Stdin = slave
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "+ node-1 (controller): provision + deploy") || !strings.Contains(string(out), "Apply these changes") {
		t.Fatalf("answer yes: %v\n%s", err, out)
	}
	if n := applied(); n != 1 {
		t.Fatalf("serial %d after yes, want 1", n)
	}

	// --auto-approve, and a saved plan, do not ask (stdin /dev/null).
	if out, err := fuelsyncCmd("--repo", repo, "--workdir", wd, "plan", "--cluster", "demo").CombinedOutput(); err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	if stdout, stderr, err := apply(devnull, "--auto-approve"); err != nil || !strings.Contains(stdout, "Nothing to apply.") {
		t.Errorf("apply --auto-approve: %v\n%s%s", err, stdout, stderr)
	}
	planFile := filepath.Join(t.TempDir(), "x.plan")
	if out, err := fuelsyncCmd("--repo", repo, "--workdir", wd, "plan", "--out", planFile).CombinedOutput(); err != nil {
		t.Fatalf("plan --out: %v\n%s", err, out)
	}
	if stdout, stderr, err := apply(devnull, planFile); err != nil || strings.Contains(stdout, "Apply these changes") {
		t.Errorf("apply PLANFILE: %v\n%s%s", err, stdout, stderr)
	}
}

// killedBySIGKILL reports whether the process cmd ran was killed by SIGKILL.
func killedBySIGKILL(cmd *exec.Cmd) bool {
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// checkAfterKill asserts what a killed apply left: the state reads, is the one
// before the apply or the one it published (serial before or before+1), the
// current set matches it exactly, and the next plan works. With reapply, the
// next apply completes too, publishing serial before+1 (or finding it done).
func checkAfterKill(t *testing.T, what, repo, wd string, before int64, reapply bool) {
	t.Helper()
	st := checkWorkdir(t, wd)
	if st.Serial != before && st.Serial != before+1 {
		t.Fatalf("%s: serial %d, want %d or %d", what, st.Serial, before, before+1)
	}
	if out, err := fuelsyncCmd("--repo", repo, "--workdir", wd, "-q", "plan").CombinedOutput(); err != nil {
		t.Fatalf("%s: the next plan fails: %v\n%s", what, err, out)
	}
	if !reapply {
		return
	}
	if out, err := fuelsyncCmd("--repo", repo, "--workdir", wd, "-q", "apply", "--auto-approve").CombinedOutput(); err != nil {
		t.Fatalf("%s: the next apply fails: %v\n%s", what, err, out)
	}
	if st := checkWorkdir(t, wd); st.Serial != before+1 {
		t.Fatalf("%s: serial %d after the next apply, want %d", what, st.Serial, before+1)
	}
}

// stepFixture is a small repository with two variants of its cluster (a, and
// b without node-1), and work directories to start applies from: template1
// with one set, template5 with 5 (the next apply prunes one), both made of
// other variants (node-1 renamed), so that an apply of a builds trees. Its
// applies may run side by side (t.Parallel), each in its own work directory.
type stepFixture struct {
	repo, clusterFile    string
	a, b                 []byte
	tmp                  string
	template1, template5 string
}

func newStepFixture(t *testing.T) *stepFixture {
	t.Helper()
	f := &stepFixture{tmp: t.TempDir()}
	f.repo, f.clusterFile, f.a, f.b = applyRepoSpec(t, repogen.Spec{Plugins: 1, Tasks: 20, Nodes: 3, Clusters: 1, Seed: 5})
	f.template1, f.template5 = filepath.Join(f.tmp, "template-1"), filepath.Join(f.tmp, "template-5")
	// The sets of template5 are c, b, d, b, d: the apply of a builds trees
	// (its node-1 is in none of them), and pruning set 1 removes the trees
	// only c links (its node-9).
	renamed := func(n string) []byte {
		return bytes.Replace(f.a, []byte("  node-1:\n    id: 1\n"), []byte("  node-"+n+":\n    id: "+n+"\n"), 1)
	}
	for i := range state.Keep {
		variant := f.b
		switch {
		case i == 0:
			variant = renamed("9")
		case i%2 == 0:
			variant = renamed("8")
		}
		if err := os.WriteFile(f.clusterFile, variant, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := fuelsyncCmd("--repo", f.repo, "--workdir", f.template5, "-q", "apply", "--auto-approve").CombinedOutput(); err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		if i == 0 {
			copyWorkdir(t, f.template5, f.template1)
		}
	}
	if st := checkWorkdir(t, f.template5); st.Serial != state.Keep {
		t.Fatalf("template serial %d", st.Serial)
	}
	// Every apply of the step tests applies a: written once, so that they can
	// run side by side.
	if err := os.WriteFile(f.clusterFile, f.a, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// cases are the applies the step tests interrupt: the work directory to start
// from ("": none) and its serial.
func (f *stepFixture) cases() []struct {
	name, template string
	before         int64
} {
	return []struct {
		name, template string
		before         int64
	}{
		{"first apply", "", 0},
		{"second apply", f.template1, 1},
		{"apply over 5 sets", f.template5, state.Keep},
	}
}

// apply runs an apply of variant a on a copy of template (none: a new work
// directory) with env, under the command prefix when given (strace).
func (f *stepFixture) apply(t *testing.T, wd, template string, env []string, prefix ...string) (cmd *exec.Cmd, out string, err error) {
	t.Helper()
	if err := os.RemoveAll(wd); err != nil {
		t.Fatal(err)
	}
	if template != "" {
		copyWorkdir(t, template, wd)
	}
	args := []string{"--repo", f.repo, "--workdir", wd, "-q", "apply", "--auto-approve"}
	cmd = fuelsyncCmd(args...)
	if len(prefix) > 0 {
		cmd = exec.Command(prefix[0], append(append(prefix[1:], os.Args[0]), args...)...)
		cmd.Env = append(os.Environ(), "FUELSYNC_RUN_MAIN=1")
	}
	cmd.Env = append(cmd.Env, env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	return cmd, buf.String(), err
}

// crashAtEveryStep kills `fuelsync apply` with SIGKILL just before each
// step that changes the work directory in turn (every mkdir, file creation,
// fsync, rename, symlink, hard link and removal of tidying and publishing,
// objects and trees included, through the failpoint state/step=kill@N): in a first
// apply, a second one, and one that publishes over 5 sets and prunes the
// oldest (and the trees and objects only it linked). Then, with strace, at the
// Nth fsync, renameat, symlinkat, linkat, unlinkat and mkdirat system call of a
// thread for every N until one apply runs through (strace counts per thread, so this is a sample,
// not every call; skipped without strace). After every kill the next plan
// works and the state is one of the two sets, complete; every eighth time, the
// next apply completes too. It returns the number of kills, and whether strace
// was there to run.
func crashAtEveryStep(t *testing.T) (int, bool) {
	f := newStepFixture(t)
	// The cases, and below the system calls, run side by side (two at a time
	// on two cores: go test's -parallel), each in its own work directory.
	var mu sync.Mutex
	kills := 0
	seen := map[string]bool{}
	t.Run("steps", func(t *testing.T) {
		for i, tc := range f.cases() {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				wd := filepath.Join(f.tmp, fmt.Sprintf("wd-step-%d", i))
				steps := 0
				kinds := map[string]bool{}
				for n := 1; ; n++ {
					cmd, out, err := f.apply(t, wd, tc.template, []string{fmt.Sprintf("%s=%s=kill@%d", failpoint.EnvVar, failpoint.StateStep, n)})
					if !killedBySIGKILL(cmd) {
						if err != nil {
							t.Fatalf("%s: %v\n%s", tc.name, err, out)
						}
						break
					}
					steps++
					for _, kind := range []string{"create .tmp-", "rename object ", "link ", "remove object ", "mkdir tree ", "link tree ", "rename tree ", "remove tree ",
						"mkdir nodeset ", "symlink nodeset ", "rename nodeset ", "symlink nodes ", "remove nodeset "} {
						if strings.Contains(out, "killed before "+kind) {
							kinds[kind] = true
						}
					}
					checkAfterKill(t, fmt.Sprintf("%s, %s", tc.name, strings.TrimSpace(out)), f.repo, wd, tc.before, n%8 == 0)
				}
				if steps < 10 {
					t.Errorf("%s: only %d steps", tc.name, steps)
				}
				// The steps of the object store: writing an object, linking it into
				// the set, building a nodeset of the node directories' trees,
				// linking it as a cluster's nodes directory, and (pruning a set)
				// removing the nodesets, trees and objects no set links.
				want := []string{"create .tmp-", "rename object ", "link ", "mkdir nodeset ", "symlink nodeset ", "rename nodeset ", "symlink nodes "}
				if tc.before == state.Keep {
					want = append(want, "remove nodeset ", "remove tree ", "remove object ")
				}
				for _, kind := range want {
					if !kinds[kind] {
						t.Errorf("%s: never killed before a step %q", tc.name, kind+"…")
					}
				}
				t.Logf("%s: killed at each of %d steps", tc.name, steps)
				mu.Lock()
				defer mu.Unlock()
				kills += steps
				for k := range kinds {
					seen[k] = true
				}
			})
		}
	})
	// Building a tree (its directory, its links, its rename): node
	// directories are linked in parallel, so the Nth step is not always the
	// same; over the three applies each is hit.
	for _, kind := range []string{"mkdir tree ", "link tree ", "rename tree "} {
		if !seen[kind] {
			t.Errorf("never killed before a step %q", kind+"…")
		}
	}
	stepKills := kills

	strace, ok := testenv.Have(t, "strace", "apt-get install strace")
	if !ok {
		t.Logf("%d kills; strace is not installed: the kills at system calls are skipped (apt-get install strace)", kills)
		return kills, false
	}
	// strace needs ptrace, which a container may refuse (seccomp, or
	// kernel.yama.ptrace_scope), and an old strace has no inject: try the
	// flags below on a command that makes no fsync call.
	if out, err := exec.Command(strace, "-f", "-qq", "-o", os.DevNull, "-e", "trace=fsync", "-e", "inject=fsync:signal=SIGKILL:when=1", "true").CombinedOutput(); err != nil {
		if testenv.InCI() {
			t.Fatalf("%d kills; strace does not run here (%v: %s), and CI=true: the kills at system calls must run", kills, err, bytes.TrimSpace(out))
		}
		t.Logf("%d kills; strace does not run here (%v: %s): the kills at system calls are skipped", kills, err, bytes.TrimSpace(out))
		return kills, false
	}
	t.Run("system calls", func(t *testing.T) {
		for i, tc := range f.cases() {
			if tc.before == 1 {
				continue
			}
			for _, sc := range []string{"fsync", "renameat", "symlinkat", "linkat", "unlinkat", "mkdirat"} {
				t.Run(tc.name+"/"+sc, func(t *testing.T) {
					t.Parallel()
					wd := filepath.Join(f.tmp, fmt.Sprintf("wd-strace-%d-%s", i, sc))
					n := 1
					for ; n < 100; n++ {
						prefix := []string{strace, "-f", "-qq", "-o", os.DevNull, "-e", "trace=" + sc,
							"-e", fmt.Sprintf("inject=%s:signal=SIGKILL:when=%d", sc, n)}
						cmd, out, err := f.apply(t, wd, tc.template, []string{"GOMAXPROCS=1"}, prefix...)
						if !killedBySIGKILL(cmd) {
							if err != nil {
								t.Fatalf("%s under strace: %v\n%s", tc.name, err, out)
							}
							break
						}
						mu.Lock()
						kills++
						mu.Unlock()
						checkAfterKill(t, fmt.Sprintf("%s under strace, %s #%d: %s", tc.name, sc, n, out), f.repo, wd, tc.before, n%8 == 0)
					}
					t.Logf("%s under strace: killed at %s #1 to #%d", tc.name, sc, n-1)
					if n == 1 && tc.template != "" {
						t.Errorf("%s under strace: apply makes no %s call", tc.name, sc)
					}
				})
			}
		}
	})
	t.Logf("%d kills at steps, %d at system calls under strace", stepKills, kills-stepKills)
	return kills, true
}

// TestApplyFailedStepReportsState fails each step of the apply commit sequence
// in turn with ENOSPC (the failpoint state/step=fail@N), as a full disk or inode table
// does, in a first apply: apply exits 1, says "the applied state is unchanged"
// only when it is, and "serial 1 was applied" when the failure came after the
// switch (linking state.json); the next plan works either way. (Every step of
// every kind of publish is failed in-process by reconcile's TestPublishFailedStep.)
func TestApplyFailedStepReportsState(t *testing.T) {
	requireTestHooks(t)
	if testing.Short() {
		t.Skip("fails some 50 applies")
	}
	f := newStepFixture(t)
	for _, tc := range f.cases()[:1] {
		failed, applied := 0, 0
		for n := 1; n < 1000; n++ {
			wd := filepath.Join(f.tmp, "wd")
			_, out, err := f.apply(t, wd, tc.template, []string{fmt.Sprintf("%s=%s=fail@%d", failpoint.EnvVar, failpoint.StateStep, n)})
			if !strings.Contains(out, "failpoint "+failpoint.StateStep+"=fail@") {
				break // no step n: the apply ran through
			}
			st := checkWorkdir(t, wd)
			what := fmt.Sprintf("%s, %s", tc.name, strings.TrimSpace(out))
			switch {
			case err == nil && (strings.Contains(out, "failing remove ") || st.Serial == tc.before+1):
				// Removing leftovers or old sets is best effort.
			case err == nil:
				t.Fatalf("%s: apply succeeded without publishing", what)
			case st.Serial == tc.before:
				failed++
				if !strings.Contains(out, "the applied state is unchanged") {
					t.Errorf("%s: does not say the state is unchanged", what)
				}
			case st.Serial == tc.before+1:
				applied++
				want := fmt.Sprintf("serial %d was applied, but", tc.before+1)
				if !strings.Contains(out, want) || strings.Contains(out, "unchanged") {
					t.Errorf("%s: want %q and not \"unchanged\"", what, want)
				}
			default:
				t.Fatalf("%s: serial %d", what, st.Serial)
			}
			checkAfterKill(t, what, f.repo, wd, tc.before, n%8 == 0)
		}
		t.Logf("%s: %d failures left the state unchanged, %d came after the switch", tc.name, failed, applied)
		if failed < 10 || applied == 0 {
			t.Errorf("%s: %d failures before the switch, %d after: the steps were not reached", tc.name, failed, applied)
		}
	}
}
