//go:build linux

package executor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// FuzzCheck: Check on any JSON parameters, of any type, decoded with
// float64 or json.Number numbers, never panics; a task it passes is one
// whose plan keeps the rules: its strings without NUL, its paths absolute,
// its durations and retries within bounds.
func FuzzCheck(f *testing.F) {
	testenv.ShortMinimize(f, "50x")
	f.Add("shell", `{"cmd":"echo hi","timeout":10,"retries":2,"interval":0.5,"cwd":"/tmp"}`, false)
	f.Add("puppet", `{"puppet_manifest":"site.pp","puppet_modules":"/a:/b","cwd":"/etc"}`, true)
	f.Add("upload_file", `{"path":"/etc/x","data":"a\u0000b","permissions":"0640","dir_permissions":"750"}`, false)
	f.Add("copy_files", `{"files":[{"src":"/a","dst":"/b","permissions":"0600"},"x",{"src":1}]}`, false)
	f.Add("sync", `{"src":"rsync://h:/m/","dst":"/etc/puppet/modules","timeout":"300"}`, false)
	f.Add("reboot", `{"timeout":1e400}`, false)
	f.Add("skipped", `{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`, true)
	f.Add("ansible", `{"timeout":-1,"retries":1.5}`, false)
	f.Add("nope", `null`, false)
	dir := f.TempDir()
	e, err := New(Config{StateDir: dir, Overrides: map[string][]string{"ansible": {"true"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, typ, params string, useNumber bool) {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(params))
		if useNumber {
			d.UseNumber()
		}
		if d.Decode(&m) != nil {
			return
		}
		tk := Task{ID: "t", Type: typ, Parameters: m, Noop: useNumber}
		err := e.Check(tk)
		p, perr := e.plan(tk)
		if (err == nil) != (perr == nil) {
			t.Fatalf("Check %v, plan %v", err, perr)
		}
		if err != nil {
			if len(err.(*CheckError).Problems) > maxProblems+1 {
				t.Fatalf("%d problems", len(err.(*CheckError).Problems))
			}
			return
		}
		checkPlan(t, p)
	})
}

// checkPlan fails t when a checked plan breaks a rule.
func checkPlan(t *testing.T, p *plan) {
	for _, a := range p.argv {
		if strings.IndexByte(a, 0) >= 0 {
			t.Fatalf("argv %q has a NUL", p.argv)
		}
	}
	if p.action == actCommand && !p.override && p.task.Type != "shell" && len(p.argv) > 0 && p.argv[0] == "/bin/sh" {
		t.Fatalf("a %s task runs a shell", p.task.Type)
	}
	if p.cwd == "" || p.cwd[0] != '/' {
		t.Fatalf("cwd %q", p.cwd)
	}
	if p.timeout < 0 || p.timeout.Seconds() > maxSeconds || p.interval < 0 || p.interval.Seconds() > maxSeconds || p.retries < 0 || p.retries > maxRetries {
		t.Fatalf("timeout %s, interval %s, retries %d", p.timeout, p.interval, p.retries)
	}
	if (p.action == actCommand || p.action == actReboot) && p.timeout == 0 {
		t.Fatal("a command without a timeout")
	}
	for _, f := range p.files {
		if f.dst == "" || f.dst[0] != '/' || f.data == nil && (f.src == "" || f.src[0] != '/') {
			t.Fatalf("file %+v", f)
		}
		if f.data != nil && (len(*f.data) > maxData || bytes.IndexByte([]byte(*f.data), 0) >= 0) {
			t.Fatal("data over the bound or with a NUL")
		}
	}
	if len(p.files) > maxFiles {
		t.Fatalf("%d files", len(p.files))
	}
}
