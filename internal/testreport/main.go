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
	var res result
	type key struct{ pkg, test string }
	buffered := map[key][]string{}
	var times, testTimes []pkgTime
	// Packages run side by side and their events interleave: a package's
	// lines (its failing tests' output, its ok or FAIL line) are kept until
	// it ends, and printed together, as go test prints them.
	pkgOut := map[string][]string{}
	// running are the tests with output not yet ended, in the order they
	// began: a package that fails with tests still running (a -timeout
	// panic, a crash) prints theirs (unfinished).
	var running []key
	flush := func(pkg string) {
		for _, out := range pkgOut[pkg] {
			fmt.Fprint(w, out)
		}
		delete(pkgOut, pkg)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Fprintf(w, "%s\n", line) // not an event: as it is
			continue
		}
		k := key{e.Package, e.Test}
		if _, ok := buffered[k]; !ok && e.Test != "" && e.Action == "output" {
			running = append(running, k)
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "output":
			if e.Test == "" {
				// The package's own lines: ok, FAIL, build errors; not the
				// PASS that -v adds, nor the runs' headers.
				if e.Output == "PASS\n" || strings.HasPrefix(e.Output, "=== ") {
					continue
				}
				pkgOut[e.Package] = append(pkgOut[e.Package], e.Output)
				continue
			}
			buffered[k] = append(buffered[k], e.Output)
		case "fail":
			if e.Test == "" {
				times = append(times, pkgTime{e.Package, e.Elapsed})
				for _, rk := range running {
					if lines, ok := buffered[rk]; ok && rk.pkg == e.Package {
						if !strings.Contains(rk.test, "/") {
							res.failed++
						}
						pkgOut[e.Package] = append(unfinished(lines), pkgOut[e.Package]...)
						delete(buffered, rk)
					}
				}
				flush(e.Package)
				continue
			}
			if !strings.Contains(e.Test, "/") {
				res.failed++
				testTimes = append(testTimes, pkgTime{e.Package + " " + e.Test, e.Elapsed})
			}
			for _, out := range buffered[k] {
				if !strings.HasPrefix(out, "=== ") {
					pkgOut[e.Package] = append(pkgOut[e.Package], out)
				}
			}
			delete(buffered, k)
		case "skip":
			if e.Test == "" {
				flush(e.Package)
				continue
			}
			res.skips = append(res.skips, skip{e.Package, e.Test, reason(buffered[k])})
			if !strings.Contains(e.Test, "/") {
				res.skip++
			}
			delete(buffered, k)
		case "pass":
			delete(buffered, k)
			if e.Test == "" {
				times = append(times, pkgTime{e.Package, e.Elapsed})
				flush(e.Package)
			} else if !strings.Contains(e.Test, "/") {
				res.passed++
				testTimes = append(testTimes, pkgTime{e.Package + " " + e.Test, e.Elapsed})
			}
		}
	}
	for pkg := range pkgOut { // a package whose end never came (go test killed)
		flush(pkg)
	}
	res.slow = slowest(times, 3)
	res.slowTests = slowest(testTimes, 5)
	return res
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
