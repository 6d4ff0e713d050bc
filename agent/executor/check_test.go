//go:build linux

package executor

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// checkCase is a task and a problem Check must report for it ("" for none).
type checkCase struct {
	name string
	task Task
	want string
}

// nested is a value nested n maps deep.
func nested(n int) any {
	v := any("x")
	for range n {
		v = map[string]any{"a": v}
	}
	return v
}

// manyFiles is a copy_files list of n files.
func manyFiles(n int) []any {
	files := make([]any, n)
	for i := range files {
		files[i] = map[string]any{"src": "/a", "dst": "/b"}
	}
	return files
}

func withID(id string, tk Task) Task    { tk.ID = id; return tk }
func withType(typ string, tk Task) Task { tk.Type = typ; return tk }

// checkCases: each check, on a task that breaks only it, and tasks that
// keep the rules.
var checkCases = []checkCase{
	{"a good shell task", shell("true", "timeout", 10.0, "retries", 1.0, "interval", 0.0, "cwd", "/tmp"), ""},
	{"numbers as json.Number", shell("true", "timeout", json.Number("10"), "retries", json.Number("2")), ""},
	{"numbers as Go integers", shell("true", "timeout", 10, "retries", int64(2), "interval", uint8(1)), ""},
	{"null is absent", shell("true", "timeout", nil, "retries", nil, "cwd", nil), ""},
	{"fractional seconds", shell("true", "timeout", 0.5, "interval", 0.25), ""},
	{"unknown parameters are kept out of it", shell("true", "debug", true, "extra", map[string]any{"k": []any{1.0}}), ""},

	{"empty id", withID("", shell("true")), "id: empty"},
	{"long id", withID(strings.Repeat("x", maxID+1), shell("true")), "id: 257 bytes, over the bound of 256"},
	{"control character in the id", withID("a\nb", shell("true")), `id "a\nb": not valid UTF-8 or has a control character`},
	{"invalid UTF-8 id", withID("a\xffb", shell("true")), "not valid UTF-8"},
	{"empty type", withType("", shell("true")), `type "": want letters`},
	{"type with a slash", withType("../x", shell("true")), `type "../x": want letters`},
	{"NUL in a string", shell("true", "extra", "a\x00b"), "parameters.extra: a NUL byte"},
	{"NUL in the cmd", shell("echo a\x00b"), "parameters.cmd: a NUL byte"},
	{"NUL in a key", shell("true", "ex\x00tra", "x"), "a NUL byte in the key"},
	{"NUL deep in a list", shell("true", "extra", []any{map[string]any{"k": "\x00"}}), "parameters.extra[0].k: a NUL byte"},
	{"nested too deep", shell("true", "extra", nested(40)), "nested deeper than 32"},
	{"a value of an unknown Go type", shell("true", "extra", []string{"a"}), "parameters.extra: a value of type []string"},
	{"a json.Number that is no number", shell("true", "timeout", json.Number("abc")), "parameters.timeout: want a number of seconds"},

	{"timeout not a number", shell("true", "timeout", "abc"), `parameters.timeout: want a number of seconds, not "abc"`},
	{"timeout as a numeric string", shell("true", "timeout", "300"), `parameters.timeout: want a number of seconds, not "300"`},
	{"timeout zero", shell("true", "timeout", 0.0), "parameters.timeout: want over 0 seconds"},
	{"timeout negative", shell("true", "timeout", -1.0), "parameters.timeout: want over 0 seconds"},
	{"timeout over 30 days", shell("true", "timeout", 1e9), "at most 2592000, not 1e+09"},
	{"retries fractional", shell("true", "retries", 1.5), "parameters.retries: want a whole number from 0 to 100, not 1.5"},
	{"retries negative", shell("true", "retries", -1.0), "parameters.retries: want a whole number"},
	{"retries over the bound", shell("true", "retries", 101.0), "parameters.retries: want a whole number"},
	{"retries a string", shell("true", "retries", "2"), `parameters.retries: want a whole number from 0 to 100, not "2"`},
	{"interval negative", shell("true", "interval", -1.0), "parameters.interval: want 0 or more seconds"},
	{"interval a boolean", shell("true", "interval", true), "parameters.interval: want a number of seconds, not true"},
	{"cwd relative", shell("true", "cwd", "tmp"), `parameters.cwd: want an absolute path, not "tmp"`},
	{"cwd a number", shell("true", "cwd", 1.0), "parameters.cwd: want a string, not 1"},
	{"cwd over the bound", shell("true", "cwd", "/"+strings.Repeat("a", maxPath)), "parameters.cwd: 4097 bytes, over the bound of 4096"},

	{"shell without cmd", task("shell"), "parameters.cmd: required"},
	{"shell with an empty cmd", shell("  "), "parameters.cmd: empty"},
	{"shell with a cmd list", task("shell", "cmd", []any{"ls"}), "parameters.cmd: want a string, not a list"},
	{"shell cmd over 64 KiB", shell(strings.Repeat("x", maxCmd+1)), "parameters.cmd: 65537 bytes, over the bound of 65536"},

	{"puppet", task("puppet", "puppet_manifest", "/etc/puppet/site.pp", "puppet_modules", "/etc/puppet/modules:/usr/share/puppet/modules"), ""},
	{"puppet with a relative manifest", task("puppet", "puppet_manifest", "site.pp", "cwd", "/etc/puppet"), ""},
	{"puppet without a manifest", task("puppet"), "parameters.puppet_manifest: required"},
	{"puppet with an empty manifest", task("puppet", "puppet_manifest", ""), "parameters.puppet_manifest: empty"},
	{"puppet with a module directory relative to cwd (a plugin's)", task("puppet", "puppet_manifest", "/a.pp", "puppet_modules", "puppet/modules:/etc/puppet/modules"), ""},
	{"puppet with an empty module directory", task("puppet", "puppet_manifest", "/a.pp", "puppet_modules", "/a::/b"), `parameters.puppet_modules: an empty directory in "/a::/b"`},

	{"upload_file", task("upload_file", "path", "/etc/x", "data", "", "permissions", "0640", "dir_permissions", "750"), ""},
	{"upload_file without a path", task("upload_file", "data", "x"), "parameters.path: required"},
	{"upload_file with a relative path", task("upload_file", "path", "etc/x", "data", "x"), `parameters.path: want an absolute path, not "etc/x"`},
	{"upload_file to /", task("upload_file", "path", "/", "data", "x"), `parameters.path: "/" is not a file`},
	{"upload_file without data", task("upload_file", "path", "/etc/x"), "parameters.data: required"},
	{"upload_file with an unevaluated yaql data", task("upload_file", "path", "/etc/x", "data", map[string]any{"yaql_exp": "$.x"}), "parameters.data: want a string, not a map"},
	{"upload_file data over 1 MiB", task("upload_file", "path", "/etc/x", "data", strings.Repeat("x", maxData+1)), "parameters.data: 1048577 bytes, over the bound of 1048576"},
	{"permissions not octal", task("upload_file", "path", "/x", "data", "", "permissions", "0999"), `parameters.permissions: want an octal mode such as "0644", as a string, not "0999"`},
	{"permissions a number", task("upload_file", "path", "/x", "data", "", "permissions", 644.0), "parameters.permissions: want an octal mode such as \"0644\", as a string, not 644"},
	{"permissions too long", task("upload_file", "path", "/x", "data", "", "dir_permissions", "00755"), `parameters.dir_permissions: want an octal mode`},

	{"sync", task("sync", "src", "rsync://10.20.0.2:/puppet/modules/", "dst", "/etc/puppet/modules"), ""},
	{"sync from a path", task("sync", "src", "/srv/modules/", "dst", "/etc/puppet/modules"), ""},
	{"sync from a relative path", task("sync", "src", "modules", "dst", "/x"), `parameters.src: want an absolute path or an rsync:// URL, not "modules"`},
	{"sync from an option", task("sync", "src", "-e sh", "dst", "/x"), `parameters.src: want an absolute path or an rsync:// URL, not "-e sh"`},
	{"sync from an ssh host", task("sync", "src", "host:/x", "dst", "/x"), "parameters.src: want an absolute path or an rsync:// URL"},
	{"sync without dst", task("sync", "src", "/x"), "parameters.dst: required"},
	{"sync to a relative dst", task("sync", "src", "/x", "dst", "y"), `parameters.dst: want an absolute path, not "y"`},

	{"copy_files", task("copy_files", "files", []any{map[string]any{"src": "/a", "dst": "/b", "permissions": "0600"}}, "dir_permissions", "0700"), ""},
	{"copy_files without files", task("copy_files"), "parameters.files: required"},
	{"copy_files with a map", task("copy_files", "files", map[string]any{}), "parameters.files: want a list of {src, dst}, not a map"},
	{"copy_files with none", task("copy_files", "files", []any{}), "parameters.files: 0 files, want 1 to 1000"},
	{"copy_files with too many", task("copy_files", "files", manyFiles(maxFiles+1)), "parameters.files: 1001 files, want 1 to 1000"},
	{"copy_files with a string entry", task("copy_files", "files", []any{"/a"}), `parameters.files[0]: want a map {src, dst}, not "/a"`},
	{"copy_files with a relative src", task("copy_files", "files", []any{map[string]any{"src": "a", "dst": "/b"}}), `parameters.files[0].src: want an absolute path, not "a"`},
	{"copy_files to /", task("copy_files", "files", []any{map[string]any{"src": "/a", "dst": "//"}}), `parameters.files[0].dst: "/" is not a file`},
	{"copy_files without dst", task("copy_files", "files", []any{map[string]any{"src": "/a"}}), "parameters.files[0].dst: required"},
	{"copy_files with a bad file mode", task("copy_files", "files", []any{map[string]any{"src": "/a", "dst": "/b", "permissions": "rw"}}), `parameters.files[0].permissions: want an octal mode`},

	{"reboot", task("reboot", "timeout", 600.0), ""},
	{"reboot with a bad timeout", task("reboot", "timeout", "ten"), `parameters.timeout: want a number of seconds, not "ten"`},
	{"skipped with anything", task("skipped", "whatever", 1.0), ""},
	{"stage", task("stage"), ""},
	{"group", task("group"), ""},
	{"noop", task("noop"), ""},
	{"unknown type", task("master_shell", "cmd", "true"), `unknown task type "master_shell": the known ones are copy_files, group, noop, puppet, reboot, shell, skipped, stage, sync, upload_file (or an override for it)`},
	{"unknown type with an override", task("ansible", "playbook", "/x.yml"), ""},
	{"an override's common parameters are checked", task("ansible", "timeout", "x"), "parameters.timeout: want a number of seconds"},
}

// TestCheck: each check, on a task that breaks only it, gives its problem
// naming the field; the tasks that keep the rules pass.
func TestCheck(t *testing.T) {
	e := newTestExec(t, func(c *Config) { c.Overrides = map[string][]string{"ansible": {"true"}} })
	for _, tt := range checkCases {
		t.Run(tt.name, func(t *testing.T) {
			err := e.Check(tt.task)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v, want none", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Check passed, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Check: %v\nwant a problem with %q", err, tt.want)
			}
			if err != nil {
				if _, ok := err.(*CheckError); !ok {
					t.Errorf("Check's error is a %T, not a *CheckError", err)
				}
			}
		})
	}
}

// TestCheckListsEveryProblem: all of a task's problems are reported, not
// the first alone, each once (an override of a known type too), and a task
// with very many stops at a bound.
func TestCheckListsEveryProblem(t *testing.T) {
	e := newTestExec(t, nil)
	err := e.Check(task("upload_file", "path", "x", "data", 1.0, "timeout", "t", "retries", -1.0))
	ce, ok := err.(*CheckError)
	if !ok {
		t.Fatalf("Check: %v", err)
	}
	if len(ce.Problems) != 4 {
		t.Errorf("problems: %q, want 4", ce.Problems)
	}
	e = newTestExec(t, func(c *Config) { c.Overrides = map[string][]string{"puppet": {"true"}} })
	err = e.Check(task("puppet", "puppet_manifest", "/x.pp", "timeout", "x"))
	if ce, ok = err.(*CheckError); !ok || len(ce.Problems) != 1 {
		t.Errorf("an override of a known type: %v, want one problem", err)
	}
	many := map[string]any{}
	for i := range 50 {
		many[strings.Repeat("k", i+1)] = "\x00"
	}
	err = e.Check(Task{ID: "x", Type: "skipped", Parameters: many})
	ce, ok = err.(*CheckError)
	if !ok || len(ce.Problems) != maxProblems+1 || ce.Problems[maxProblems] != "and 30 more problems" {
		t.Errorf("Check: %v", err)
	}
}

// TestFailedCheckRunsNothing: Run makes the same checks; a task that fails
// them is failed ("invalid task: …") and not run.
func TestFailedCheckRunsNothing(t *testing.T) {
	e := newTestExec(t, nil)
	marker := filepath.Join(t.TempDir(), "ran")
	r := e.Run(t.Context(), shell("touch "+marker, "timeout", "abc"))
	if r.Status != Failed || r.Message != `invalid task: parameters.timeout: want a number of seconds, not "abc"` || r.Attempts != 0 {
		t.Errorf("Run: %+v", r)
	}
	if exists(marker) {
		t.Error("the command ran")
	}
}

// TestPlanArgv: what each command type runs, as argv: the shell type alone
// has a shell; puppet's flags and manifest; rsync's options.
func TestPlanArgv(t *testing.T) {
	e := newTestExec(t, func(c *Config) { c.Puppet = []string{"/opt/puppet", "apply"} })
	noop := func(tk Task) Task { tk.Noop = true; return tk }
	tests := []struct {
		name string
		task Task
		want []string
	}{
		{"shell", shell("echo $HOME; ls"), []string{"/bin/sh", "-c", "echo $HOME; ls"}},
		{"puppet", task("puppet", "puppet_manifest", "/etc/p/site.pp", "puppet_modules", "/m1:/m2"),
			[]string{"/opt/puppet", "apply", "--modulepath=/m1:/m2", "/etc/p/site.pp"}},
		{"puppet, the default module path", task("puppet", "puppet_manifest", "/site.pp"),
			[]string{"/opt/puppet", "apply", "--modulepath=/etc/puppet/modules", "/site.pp"}},
		{"puppet, relative to cwd", task("puppet", "puppet_manifest", "m/site.pp", "cwd", "/etc/fuel"),
			[]string{"/opt/puppet", "apply", "--modulepath=/etc/puppet/modules", "/etc/fuel/m/site.pp"}},
		{"puppet, a noop run", noop(task("puppet", "puppet_manifest", "/site.pp")),
			[]string{"/opt/puppet", "apply", "--modulepath=/etc/puppet/modules", "--noop", "/site.pp"}},
		{"sync", task("sync", "src", "rsync://m:/puppet/modules/", "dst", "/etc/puppet/modules/"),
			[]string{"rsync", "-c", "-r", "--delete", "-l", "rsync://m:/puppet/modules/", "/etc/puppet/modules"}},
		{"a manifest with shell syntax stays one argument", task("puppet", "puppet_manifest", "/a b;$(x).pp"),
			[]string{"/opt/puppet", "apply", "--modulepath=/etc/puppet/modules", "/a b;$(x).pp"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e.plan(tt.task)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(p.argv, "\x00") != strings.Join(tt.want, "\x00") {
				t.Errorf("argv %q, want %q", p.argv, tt.want)
			}
		})
	}
}

// TestDefaults: astute's defaults for the common parameters, per type.
func TestDefaults(t *testing.T) {
	e := newTestExec(t, func(c *Config) { c.Overrides = map[string][]string{"ansible": {"true"}} })
	tests := []struct {
		task              Task
		timeout, interval float64
		retries           int
	}{
		{shell("true"), 300, 2, 2},
		{task("puppet", "puppet_manifest", "/x.pp"), 5400, 2, 2},
		{task("upload_file", "path", "/x", "data", ""), 60, 2, 3},
		{task("sync", "src", "/a", "dst", "/b"), 300, 2, 10},
		{task("copy_files", "files", []any{map[string]any{"src": "/a", "dst": "/b"}}), 300, 2, 0},
		{task("reboot"), 900, 0, 0},
		{task("ansible"), 3600, 2, 0},
		{shell("true", "timeout", 7.0, "retries", 0.0, "interval", 1.0), 7, 1, 0},
	}
	for _, tt := range tests {
		p, err := e.plan(tt.task)
		if err != nil {
			t.Fatal(err)
		}
		if p.timeout.Seconds() != tt.timeout || p.interval.Seconds() != tt.interval || p.retries != tt.retries || p.cwd != "/" && tt.task.Parameters["cwd"] == nil {
			t.Errorf("%s: timeout %s, interval %s, retries %d, cwd %s; want %gs, %gs, %d, /", tt.task.Type, p.timeout, p.interval, p.retries, p.cwd, tt.timeout, tt.interval, tt.retries)
		}
	}
}

// TestCheckOverride: a type with an override is the operator's command's:
// the type's own parameter checks do not apply (a yaql-valued data, which
// fuelsync does not evaluate, is the command's to read); the common
// parameters and the general rules still do.
func TestCheckOverride(t *testing.T) {
	e := newTestExec(t, func(c *Config) { c.Overrides = map[string][]string{"upload_file": {"true"}} })
	for _, tt := range []struct {
		name string
		task Task
		want string
	}{
		{"a yaql-valued parameter", task("upload_file", "path", "/x", "data", map[string]any{"yaql_exp": "$.toYaml()"}), ""},
		{"no path at all", task("upload_file"), ""},
		{"a bad timeout", task("upload_file", "timeout", "soon"), "parameters.timeout"},
	} {
		err := e.Check(tt.task)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Check: %v, want %q", tt.name, err, tt.want)
		}
	}
}
