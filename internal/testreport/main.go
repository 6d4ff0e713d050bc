// Command testreport runs go test with -json and prints what go test prints
// without -v (each package's ok or FAIL line, the output of the tests that
// fail, and of those still running when their package failed: go test's
// -timeout panic), then a summary of the tests that were skipped and why, as
// make test promises: a skip must not pass unseen, and the slowest packages
// and tests. Its exit status is go test's.
//
//	go run ./internal/testreport -count=1 ./...
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// event is one line of go test -json (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// skip is a skipped test and the reason it gave.
type skip struct {
	pkg, test, reason string
}

func main() {
	args := append([]string{"test", "-json"}, os.Args[1:]...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	res := report(stdout, os.Stdout)
	err = cmd.Wait()
	res.print(os.Stdout)
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
}

// result is what report counted.
type result struct {
	skips                []skip
	slow                 []string // the three slowest packages
	slowTests            []string // the five slowest top-level tests
	passed, failed, skip int      // top-level tests
}

// report reads go test -json from r and prints to w what go test prints
// without -v, and returns what it counted.
func report(r io.Reader, w io.Writer) result {
	rp := &reporter{w: w, buffered: map[testKey][]string{}, pkgOut: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintf(w, "%s\n", line) // not an event: as it is
			continue
		}
		rp.event(e)
	}
	for pkg := range rp.pkgOut { // a package whose end never came (go test killed)
		rp.flush(pkg)
	}
	rp.res.slow = slowest(rp.times, 3)
	rp.res.slowTests = slowest(rp.testTimes, 5)
	return rp.res
}

// testKey is a test of a package ("" for the package's own events).
type testKey struct{ pkg, test string }

// reporter is report's state.
type reporter struct {
	w   io.Writer
	res result
	// buffered are the lines of each test not ended yet.
	buffered map[testKey][]string
	// Packages run side by side and their events interleave: a package's
	// lines (its failing tests' output, its ok or FAIL line) are kept
	// until it ends, and printed together, as go test prints them.
	pkgOut map[string][]string
	// running are the tests with output, in the order they began: a
	// package that fails with tests still running (a -timeout panic, a
	// crash) prints theirs (unfinished).
	running          []testKey
	times, testTimes []pkgTime
}

func (rp *reporter) flush(pkg string) {
	for _, out := range rp.pkgOut[pkg] {
		fmt.Fprint(rp.w, out)
	}
	delete(rp.pkgOut, pkg)
}

// event takes one event of go test -json.
func (rp *reporter) event(e event) {
	k := testKey{e.Package, e.Test}
	top := e.Test != "" && !strings.Contains(e.Test, "/")
	if _, ok := rp.buffered[k]; !ok && e.Test != "" && e.Action == "output" {
		rp.running = append(rp.running, k)
	}
	switch e.Action {
	case "build-output":
		fmt.Fprint(rp.w, e.Output)
	case "output":
		if e.Test != "" {
			rp.buffered[k] = append(rp.buffered[k], e.Output)
		} else if e.Output != "PASS\n" && !strings.HasPrefix(e.Output, "=== ") {
			// The package's own lines: ok, FAIL, build errors; not the
			// PASS that -v adds, nor the runs' headers.
			rp.pkgOut[e.Package] = append(rp.pkgOut[e.Package], e.Output)
		}
	case "fail":
		if e.Test == "" {
			rp.times = append(rp.times, pkgTime{e.Package, e.Elapsed})
			rp.failPackage(e.Package)
			rp.flush(e.Package)
			return
		}
		if top {
			rp.res.failed++
			rp.testTimes = append(rp.testTimes, pkgTime{e.Package + " " + e.Test, e.Elapsed})
		}
		for _, out := range rp.buffered[k] {
			if !strings.HasPrefix(out, "=== ") {
				rp.pkgOut[e.Package] = append(rp.pkgOut[e.Package], out)
			}
		}
		delete(rp.buffered, k)
	case "skip":
		if e.Test == "" {
			rp.flush(e.Package)
			return
		}
		rp.res.skips = append(rp.res.skips, skip{e.Package, e.Test, reason(rp.buffered[k])})
		if top {
			rp.res.skip++
		}
		delete(rp.buffered, k)
	case "pass":
		delete(rp.buffered, k)
		switch {
		case e.Test == "":
			rp.times = append(rp.times, pkgTime{e.Package, e.Elapsed})
			rp.flush(e.Package)
		case top:
			rp.res.passed++
			rp.testTimes = append(rp.testTimes, pkgTime{e.Package + " " + e.Test, e.Elapsed})
		}
	}
}

// failPackage puts the output of the tests of pkg still running (they
// failed with it) before its own lines.
func (rp *reporter) failPackage(pkg string) {
	var lines []string
	for _, k := range rp.running {
		if out, ok := rp.buffered[k]; ok && k.pkg == pkg {
			if !strings.Contains(k.test, "/") {
				rp.res.failed++
			}
			lines = append(lines, unfinished(out)...)
			delete(rp.buffered, k)
		}
	}
	rp.pkgOut[pkg] = append(lines, rp.pkgOut[pkg]...)
}

// pkgTime is how long a package (or "package Test") took.
type pkgTime struct {
	pkg string
	s   float64
}

// slowest are the n longest of times, "name 12s", the longest first.
func slowest(times []pkgTime, n int) []string {
	sort.SliceStable(times, func(i, j int) bool { return times[i].s > times[j].s })
	var out []string
	for i := 0; i < len(times) && i < n; i++ {
		out = append(out, fmt.Sprintf("%s %.0fs", strings.TrimPrefix(times[i].pkg, "github.com/fuelsync/fuelsync/"), times[i].s))
	}
	return out
}

// dumpShown is how many lines of a goroutine dump unfinished prints.
const dumpShown = 40

// unfinished is the output of a test that had not ended when its package
// failed: its lines but the run's headers, a goroutine dump (from the first
// line after a panic's that begins "goroutine ") cut after dumpShown lines.
func unfinished(lines []string) []string {
	var out []string
	dump, panicked := -1, false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "=== "):
			continue
		case strings.HasPrefix(l, "panic: "):
			panicked = true
		case panicked && dump < 0 && strings.HasPrefix(l, "goroutine "):
			dump = i
		}
		if dump >= 0 && i-dump >= dumpShown {
			out = append(out, fmt.Sprintf("... (%d more lines)\n", len(lines)-i))
			break
		}
		out = append(out, l)
	}
	return out
}

// print writes the summary: the skipped tests with their reasons, the
// slowest packages, and the counts (a line CI reads: N passed, N failed).
func (res result) print(w io.Writer) {
	printSkips(w, res.skips)
	if len(res.slow) > 0 {
		fmt.Fprintf(w, "slowest packages: %s\n", strings.Join(res.slow, ", "))
	}
	if len(res.slowTests) > 0 {
		fmt.Fprintf(w, "slowest tests: %s\n", strings.Join(res.slowTests, ", "))
	}
	fmt.Fprintf(w, "tests: %d passed, %d failed, %d skipped\n", res.passed, res.failed, res.skip)
}

// reason is the message a skipped test printed: its lines but the run's
// header and the --- SKIP line, joined.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		// "file_test.go:12: message": the message.
		if i := strings.Index(t, ".go:"); i >= 0 {
			if j := strings.Index(t[i+4:], ": "); j >= 0 {
				t = t[i+4+j+2:]
			}
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}

func printSkips(w io.Writer, skips []skip) {
	if len(skips) == 0 {
		fmt.Fprintln(w, "\nno test was skipped")
		return
	}
	sort.Slice(skips, func(i, j int) bool {
		if skips[i].pkg != skips[j].pkg {
			return skips[i].pkg < skips[j].pkg
		}
		return skips[i].test < skips[j].test
	})
	fmt.Fprintf(w, "\n%d tests skipped (subtests included), and why:\n", len(skips))
	for _, s := range skips {
		fmt.Fprintf(w, "  %s %s: %s\n", strings.TrimPrefix(s.pkg, "github.com/fuelsync/fuelsync/"), s.test, s.reason)
	}
}
