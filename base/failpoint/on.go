//go:build fuelsync_testhooks

package failpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Enabled says whether the failpoints are built in: with the tag
// fuelsync_testhooks.
const Enabled = true

var (
	mu      sync.RWMutex
	enabled = map[string]Func{}
)

// names are the points there are: FUELSYNC_FAILPOINTS may name no other.
var names = []string{StateStep, StateRead, StatePruneRead, OperationManifest, ShardCommit, CLILoad, CLIRender, CLIRenderApplied, ServeShard}

// Inject runs the point name's function, if enabled, with args, and returns
// its error; nil when the point is not enabled.
func Inject(name string, args ...string) error {
	mu.RLock()
	f := enabled[name]
	mu.RUnlock()
	if f == nil {
		return nil
	}
	return f(args...)
}

// Enable makes the point name run f, in place of what it ran before.
func Enable(name string, f Func) {
	mu.Lock()
	defer mu.Unlock()
	enabled[name] = f
}

// Disable makes the point name do nothing again.
func Disable(name string) {
	mu.Lock()
	defer mu.Unlock()
	delete(enabled, name)
}

func init() {
	spec := os.Getenv(EnvVar)
	if spec == "" {
		return
	}
	points, err := Parse(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fuelsync: %s: %v\n", EnvVar, err)
		os.Exit(2)
	}
	for name, f := range points {
		Enable(name, f)
	}
}

// Parse reads a FUELSYNC_FAILPOINTS value into the function of each point it
// names.
func Parse(spec string) (map[string]Func, error) {
	points := map[string]Func{}
	for _, p := range strings.Split(spec, ";") {
		name, terms, ok := strings.Cut(p, "=")
		switch {
		case !ok || terms == "":
			return nil, fmt.Errorf("%q: want name=term", p)
		case !slices.Contains(names, name):
			return nil, fmt.Errorf("%q: no such point (the points: %s)", name, strings.Join(names, ", "))
		case points[name] != nil:
			return nil, fmt.Errorf("%q: named twice", name)
		}
		f, err := parseTerms(name, terms)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		points[name] = f
	}
	return points, nil
}

// parseTerms makes the function of the point name with its terms, which
// share one count of the point's evaluations.
func parseTerms(name, terms string) (Func, error) {
	var actions []func(n int64, args []string) error
	for _, term := range strings.Split(terms, ",") {
		a, err := parseTerm(name, term)
		if err != nil {
			return nil, err
		}
		actions = append(actions, a)
	}
	var count atomic.Int64
	return func(args ...string) error {
		n := count.Add(1)
		for _, a := range actions {
			if err := a(n, args); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// parseTerm makes the action of one term of the point name, given the
// evaluation's number and the point's arguments.
func parseTerm(name, term string) (func(n int64, args []string) error, error) {
	if verb, at, ok := strings.Cut(term, "@"); ok {
		nth, err := strconv.ParseInt(at, 10, 64)
		if err != nil || nth <= 0 {
			return nil, fmt.Errorf("%q: want a count from 1", term)
		}
		switch verb {
		case "kill":
			return func(n int64, args []string) error {
				if n == nth {
					fmt.Fprintf(os.Stderr, "fuelsync: failpoint %s=%s: killed before %s\n", name, term, strings.Join(args, " "))
					kill()
				}
				return nil
			}, nil
		case "fail":
			return func(n int64, args []string) error {
				if n != nth {
					return nil
				}
				fmt.Fprintf(os.Stderr, "fuelsync: failpoint %s=%s: failing %s\n", name, term, strings.Join(args, " "))
				return fmt.Errorf("%s: %w", strings.Join(args, " "), syscall.ENOSPC)
			}, nil
		}
	}
	verb, dir, ok := strings.Cut(term, "(")
	if !ok || !strings.HasSuffix(dir, ")") || len(dir) == 1 {
		return nil, fmt.Errorf("%q: want kill@N, fail@N, pause(DIR) or cpuprofile(DIR)", term)
	}
	dir = strings.TrimSuffix(dir, ")")
	switch verb {
	case "pause":
		return func(_ int64, args []string) error { pause(dir, args); return nil }, nil
	case "cpuprofile":
		var once sync.Once
		return func(int64, []string) error { once.Do(func() { cpuProfile(dir) }); return nil }, nil
	}
	return nil, fmt.Errorf("%q: want kill@N, fail@N, pause(DIR) or cpuprofile(DIR)", term)
}

// kill kills the process: SIGKILL on Unix (TerminateProcess elsewhere), so
// that no deferred function and no cleanup runs.
func kill() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {}
}

// pause holds the caller when the file dir/arm exists: it removes dir/arm,
// writes args to dir/paused and waits until dir/paused is removed (a test
// stops the process there, or lets it go on). dir/paused appears whole (written
// beside it, then renamed): a test that reads it as soon as it exists never
// reads it empty.
func pause(dir string, args []string) {
	if os.Remove(filepath.Join(dir, "arm")) != nil {
		return
	}
	paused := filepath.Join(dir, "paused")
	tmp := filepath.Join(dir, ".paused.tmp")
	if os.WriteFile(tmp, []byte(strings.Join(args, " ")+"\n"), 0o644) != nil || os.Rename(tmp, paused) != nil {
		return
	}
	for {
		if _, err := os.Stat(paused); err != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
