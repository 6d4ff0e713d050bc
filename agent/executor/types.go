package executor

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// action is what a plan does.
type action int

const (
	actSkip    action = iota // nothing: skipped
	actCommand               // runs argv (shell, puppet, sync, an override)
	actUpload                // writes one file (upload_file)
	actCopy                  // copies files (copy_files)
	actReboot                // reboots the node (reboot)
)

// plan is a checked task, ready to run.
type plan struct {
	task     Task
	action   action
	skip     string   // actSkip: the message
	label    string   // names the command in messages: "puppet", "the command"
	argv     []string // actCommand, actReboot
	okCodes  []int    // exit statuses that are success (default 0)
	override bool     // argv is an override: the task goes on its input
	mkdir    string   // a directory made before each attempt (sync's dst)
	cwd      string
	timeout  time.Duration
	retries  int
	interval time.Duration
	files    []fileCopy // actUpload (one, with data), actCopy
}

// fileCopy is one file to write: data when set, else a copy of src.
type fileCopy struct {
	src, dst      string
	data          *string
	perm, dirPerm fs.FileMode
}

// typeDefaults are a type's defaults for the common parameters, astute's.
type typeDefaults struct {
	timeout, interval float64 // seconds
	retries           int
}

// builder checks a task of its type and fills in its plan (the common
// parameters are read before).
type builder func(e *Executor, p *plan, ps params)

// builders are the built-in executors by task type.
var builders = map[string]builder{
	"shell":       buildShell,
	"puppet":      buildPuppet,
	"upload_file": buildUpload,
	"sync":        buildSync,
	"copy_files":  buildCopy,
	"reboot":      buildReboot,
	"skipped":     buildNothing,
	"stage":       buildNothing,
	"group":       buildNothing,
	"noop":        buildNothing,
}

// knownTypes lists the built-in types, sorted, for the unknown type's message.
var knownTypes = func() []string {
	var ts []string
	for t := range builders {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}()

// defaultsFor are the types' defaults (astute's configuration); an
// override of a type without a built-in gets overrideDefaults.
var defaultsFor = map[string]typeDefaults{
	"shell":       {timeout: 300, retries: 2, interval: 2},
	"puppet":      {timeout: 5400, retries: 2, interval: 2},
	"upload_file": {timeout: 60, retries: 3, interval: 2},
	"sync":        {timeout: 300, retries: 10, interval: 2},
	"copy_files":  {timeout: 300, retries: 0, interval: 2},
	"reboot":      {timeout: 900},
}

var overrideDefaults = typeDefaults{timeout: 3600, retries: 0, interval: 2}

// plan checks t and makes its plan; its error is a *CheckError.
func (e *Executor) plan(t Task) (*plan, error) {
	var ps problems
	checkTask(t, &ps)
	p := &plan{task: t, cwd: filepath.Join("/", e.cfg.Root)}
	in := params{m: t.Parameters, prefix: "parameters.", ps: &ps, root: e.cfg.Root}
	build, known := builders[t.Type]
	argv, over := e.cfg.Overrides[t.Type]
	d, common := defaultsFor[t.Type]
	if over && !common {
		d, common = overrideDefaults, true
	}
	if common {
		p.timeout = in.seconds("timeout", d.timeout, false)
		p.retries = in.count("retries", d.retries, maxRetries)
		p.interval = in.seconds("interval", d.interval, true)
		if cwd := in.path("cwd", false); cwd != "" {
			p.cwd = cwd
		}
	}
	switch {
	case known && !over:
		// An override is the operator's command: the type's own parameter
		// checks are its own (a yaql-valued parameter, say).
		build(e, p, in)
	case !over && validTypeName(t.Type):
		ps.add("unknown task type %q: the known ones are %s (or an override for it)", t.Type, strings.Join(knownTypes, ", "))
	}
	if over {
		*p = plan{task: t, action: actCommand, label: "the override command", argv: argv, override: true,
			cwd: p.cwd, timeout: p.timeout, retries: p.retries, interval: p.interval}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	if t.Noop && t.Type != "puppet" {
		p.action, p.skip = actSkip, "noop run"
	}
	return p, nil
}

func buildNothing(_ *Executor, p *plan, _ params) {
	p.action, p.skip = actSkip, fmt.Sprintf("a %s task: nothing to run", p.task.Type)
}

// buildShell: cmd, run by /bin/sh -c in cwd (the only type with a shell).
func buildShell(_ *Executor, p *plan, in params) {
	cmd, _ := in.text("cmd", true, maxCmd)
	p.action, p.label, p.argv = actCommand, "the command", []string{"/bin/sh", "-c", cmd}
}

// buildPuppet: the puppet command with --modulepath (each directory
// absolute, or relative to cwd), --noop on a noop run, and puppet_manifest
// (absolute, or relative to cwd).
func buildPuppet(e *Executor, p *plan, in params) {
	manifest, ok := in.text("puppet_manifest", true, maxPath)
	switch {
	case !ok:
	case !filepath.IsAbs(manifest):
		manifest = filepath.Join(p.cwd, manifest)
	default:
		manifest = filepath.Join(in.root, filepath.Clean(manifest))
	}
	modules := filepath.Join("/", in.root, "etc/puppet/modules")
	if m, ok := in.str("puppet_modules", false, maxModules); ok {
		// A plugin's modules are relative to its cwd
		// (puppet/modules:/etc/puppet/modules), as puppet, run in cwd,
		// reads them.
		dirs := strings.Split(m, ":")
		for i, dir := range dirs {
			switch {
			case dir == "":
				in.ps.add("parameters.puppet_modules: an empty directory in %s", describe(m))
			case !filepath.IsAbs(dir):
				dirs[i] = filepath.Join(p.cwd, dir)
			default:
				dirs[i] = filepath.Join(in.root, filepath.Clean(dir))
			}
		}
		modules = strings.Join(dirs, ":")
	}
	argv := append(slices.Clone(e.cfg.Puppet), "--modulepath="+modules)
	if p.task.Noop {
		argv = append(argv, "--noop")
	}
	p.action, p.label, p.argv = actCommand, "puppet", append(argv, manifest)
	p.okCodes = []int{0, 2} // --detailed-exitcodes: 2 is changes applied
}

// buildSync: rsync -c -r --delete -l src dst, dst made first (astute's
// options).
func buildSync(e *Executor, p *plan, in params) {
	src, ok := in.text("src", true, maxPath)
	switch {
	case ok && !filepath.IsAbs(src) && !strings.HasPrefix(src, "rsync://"):
		in.ps.add("parameters.src: want an absolute path or an rsync:// URL, not %s", describe(src))
	case ok && filepath.IsAbs(src) && in.root != "":
		// Under the root; rsync's trailing slash (the directory's content)
		// kept.
		slash := strings.HasSuffix(src, "/")
		src = filepath.Join(in.root, src)
		if slash {
			src += "/"
		}
	}
	dst := in.path("dst", true)
	argv := append(slices.Clone(e.cfg.Rsync), "-c", "-r", "--delete", "-l", src, dst)
	p.action, p.label, p.argv, p.mkdir = actCommand, "rsync", argv, dst
}

// buildUpload: data written to path, atomically.
func buildUpload(_ *Executor, p *plan, in params) {
	f := fileCopy{dst: in.file("path")}
	if data, ok := in.str("data", true, maxData); ok {
		f.data = &data
	}
	f.perm = in.mode("permissions", 0o644)
	f.dirPerm = in.mode("dir_permissions", 0o755)
	p.action, p.files = actUpload, []fileCopy{f}
}

// buildCopy: files, each {src, dst} with optional permissions and
// dir_permissions over the task's.
func buildCopy(_ *Executor, p *plan, in params) {
	perm := in.mode("permissions", 0o644)
	dirPerm := in.mode("dir_permissions", 0o755)
	p.action = actCopy
	v, ok := in.get("files")
	list, isList := v.([]any)
	switch {
	case !ok:
		in.ps.add("parameters.files: required")
		return
	case !isList:
		in.ps.add("parameters.files: want a list of {src, dst}, not %s", describe(v))
		return
	case len(list) == 0 || len(list) > maxFiles:
		in.ps.add("parameters.files: %d files, want 1 to %d", len(list), maxFiles)
		return
	}
	for i, x := range list {
		m, isMap := x.(map[string]any)
		if !isMap {
			in.ps.add("parameters.files[%d]: want a map {src, dst}, not %s", i, describe(x))
			continue
		}
		f := params{m: m, prefix: fmt.Sprintf("parameters.files[%d].", i), ps: in.ps, root: in.root}
		p.files = append(p.files, fileCopy{src: f.path("src", true), dst: f.file("dst"),
			perm: f.mode("permissions", perm), dirPerm: f.mode("dir_permissions", dirPerm)})
	}
}

// buildReboot: the reboot command, then the wait for a new boot id (no
// retries).
func buildReboot(e *Executor, p *plan, _ params) {
	p.action, p.label, p.argv = actReboot, "the reboot command", e.cfg.Reboot
}
