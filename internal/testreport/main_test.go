package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReport: a passing package prints its ok line alone; a failing test its
// output; a skipped test is listed at the end with its reason; the slowest
// packages and tests, and the counts close the output.
func TestReport(t *testing.T) {
	in := `{"Action":"start","Package":"p/a"}
{"Action":"run","Package":"p/a","Test":"TestOK"}
{"Action":"output","Package":"p/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"p/a","Test":"TestOK","Output":"    a_test.go:3: chatter\n"}
{"Action":"pass","Package":"p/a","Test":"TestOK","Elapsed":0.1}
{"Action":"run","Package":"p/a","Test":"TestEtcd"}
{"Action":"output","Package":"p/a","Test":"TestEtcd","Output":"=== RUN   TestEtcd\n"}
{"Action":"output","Package":"p/a","Test":"TestEtcd","Output":"    a_test.go:9: etcd is not installed (apt-get install etcd-server)\n"}
{"Action":"output","Package":"p/a","Test":"TestEtcd","Output":"--- SKIP: TestEtcd (0.00s)\n"}
{"Action":"skip","Package":"p/a","Test":"TestEtcd","Elapsed":0}
{"Action":"output","Package":"p/a","Output":"PASS\n"}
{"Action":"output","Package":"p/a","Output":"ok  \tp/a\t0.2s\n"}
{"Action":"pass","Package":"p/a","Elapsed":0.2}
{"Action":"run","Package":"p/b","Test":"TestBad"}
{"Action":"output","Package":"p/b","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"output","Package":"p/b","Test":"TestBad","Output":"    b_test.go:5: got 1, want 2\n"}
{"Action":"output","Package":"p/b","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p/b","Test":"TestBad","Elapsed":0}
{"Action":"output","Package":"p/b","Output":"FAIL\n"}
{"Action":"output","Package":"p/b","Output":"FAIL\tp/b\t0.1s\n"}
{"Action":"fail","Package":"p/b","Elapsed":0.1}
`
	var out bytes.Buffer
	report(strings.NewReader(in), &out).print(&out)
	want := `ok  	p/a	0.2s
    b_test.go:5: got 1, want 2
--- FAIL: TestBad (0.00s)
FAIL
FAIL	p/b	0.1s

1 tests skipped (subtests included), and why:
  p/a TestEtcd: etcd is not installed (apt-get install etcd-server)
slowest packages: p/a 0s, p/b 0s
slowest tests: p/a TestOK 0s, p/b TestBad 0s
tests: 1 passed, 1 failed, 1 skipped
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// TestReportInterleaved: packages that run side by side print their lines
// together when each ends, not mixed.
func TestReportInterleaved(t *testing.T) {
	in := `{"Action":"output","Package":"p/x","Test":"TestBad","Output":"    x_test.go:5: broken\n"}
{"Action":"fail","Package":"p/x","Test":"TestBad","Elapsed":0}
{"Action":"output","Package":"p/y","Output":"ok  \tp/y\t0.1s\n"}
{"Action":"pass","Package":"p/y","Elapsed":0.1}
{"Action":"output","Package":"p/x","Output":"FAIL\tp/x\t0.2s\n"}
{"Action":"fail","Package":"p/x","Elapsed":0.2}
{"Action":"output","Package":"p/z","Output":"?   \tp/z\t[no test files]\n"}
{"Action":"skip","Package":"p/z","Elapsed":0}
`
	var out bytes.Buffer
	report(strings.NewReader(in), &out)
	want := "ok  \tp/y\t0.1s\n    x_test.go:5: broken\nFAIL\tp/x\t0.2s\n?   \tp/z\t[no test files]\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// TestReportTimeout: a package that fails with tests still running (go
// test's -timeout panic, a crash) prints their output, the goroutine dump
// cut short, before its FAIL line.
func TestReportTimeout(t *testing.T) {
	var in strings.Builder
	in.WriteString(`{"Action":"run","Package":"p/t","Test":"TestSlow"}
{"Action":"output","Package":"p/t","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"output","Package":"p/t","Test":"TestSlow","Output":"    t_test.go:4: waiting for serve\n"}
{"Action":"output","Package":"p/t","Test":"TestSlow","Output":"panic: test timed out after 1s\n"}
{"Action":"output","Package":"p/t","Test":"TestSlow","Output":"\trunning tests:\n"}
{"Action":"output","Package":"p/t","Test":"TestSlow","Output":"\t\tTestSlow (1s)\n"}
{"Action":"output","Package":"p/t","Test":"TestSlow","Output":"\n"}
`)
	for i := range 100 {
		fmt.Fprintf(&in, `{"Action":"output","Package":"p/t","Test":"TestSlow","Output":"goroutine line %d\n"}`+"\n", i)
	}
	in.WriteString(`{"Action":"output","Package":"p/t","Output":"FAIL\tp/t\t1.2s\n"}
{"Action":"fail","Package":"p/t","Elapsed":1.2}
`)
	var out bytes.Buffer
	res := report(strings.NewReader(in.String()), &out)
	got := out.String()
	for _, want := range []string{
		"    t_test.go:4: waiting for serve\npanic: test timed out after 1s\n\trunning tests:\n\t\tTestSlow (1s)\n\ngoroutine line 0\n",
		"goroutine line 39\n... (60 more lines)\nFAIL\tp/t\t1.2s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "goroutine line 40\n") || strings.Contains(got, "=== RUN") {
		t.Errorf("report:\n%s", got)
	}
	if res.failed != 1 {
		t.Errorf("%d tests failed, want 1 (the test still running)", res.failed)
	}
}
