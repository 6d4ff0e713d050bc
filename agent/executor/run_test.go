//go:build linux

package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestRunTypes: each type run for real, how it ends, its message and
// output.
func TestRunTypes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		task     Task
		status   Status
		message  string
		output   string
		attempts int
	}{
		{"shell runs in cwd with a shell", shell("echo hi; pwd; echo err >&2", "cwd", dir), Succeeded, "the command exited 0", "hi\n" + dir + "\nerr\n", 1},
		{"shell's default cwd is /", shell("pwd"), Succeeded, "the command exited 0", "/\n", 1},
		{"shell sees the task in its environment", shell(`echo "$FUELSYNC_TASK_ID $FUELSYNC_TASK_TYPE"`), Succeeded, "the command exited 0", "t-shell shell\n", 1},
		{"shell fails with its exit status", shell("exit 3", "retries", 0.0), Failed, "the command exited 3", "", 1},
		{"shell killed by a signal", shell("kill -9 $$", "retries", 0.0), Failed, "the command was killed by signal killed", "", 1},
		{"shell in a missing cwd", shell("true", "cwd", dir+"/missing", "retries", 0.0), Failed, "the working directory: stat " + dir + "/missing: no such file or directory", "", 1},
		{"shell in a cwd that is a file", shell("true", "cwd", "/etc/hostname", "retries", 0.0), Failed, "the working directory /etc/hostname: not a directory", "", 1},
		{"skipped", task("skipped"), Skipped, "a skipped task: nothing to run", "", 0},
		{"stage", task("stage"), Skipped, "a stage task: nothing to run", "", 0},
		{"group", task("group"), Skipped, "a group task: nothing to run", "", 0},
		{"noop", task("noop"), Skipped, "a noop task: nothing to run", "", 0},
		{"unknown type", task("erase_node"), Failed, `invalid task: unknown task type "erase_node": the known ones are copy_files, group, noop, puppet, reboot, shell, skipped, stage, sync, upload_file (or an override for it)`, "", 0},
	}
	e := newTestExec(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.Run(t.Context(), tt.task)
			if r.Status != tt.status || r.Message != tt.message || string(r.Output) != tt.output || r.Attempts != tt.attempts {
				t.Errorf("Run: %s %q %q attempts %d\nwant %s %q %q attempts %d", r.Status, r.Message, r.Output, r.Attempts, tt.status, tt.message, tt.output, tt.attempts)
			}
		})
	}
}

// fakePuppet writes a stand-in puppet that records its arguments and
// working directory and exits with the status in the file code.
func fakePuppet(t *testing.T) (argv []string, dir string) {
	dir = t.TempDir()
	script := filepath.Join(dir, "puppet")
	body := fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %[1]s/args\npwd > %[1]s/cwd\necho puppet output\nexit $(cat %[1]s/code)\n", dir)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{script, "apply", "--detailed-exitcodes"}, dir
}

// TestPuppet: puppet runs as argv with the module path, --noop on a noop
// run and the manifest, in cwd; 0 and 2 are success, 1, 4 and 6 failures.
func TestPuppet(t *testing.T) {
	argv, dir := fakePuppet(t)
	e := newTestExec(t, func(c *Config) { c.Puppet = argv })
	cwd := t.TempDir()
	tests := []struct {
		code    int
		noop    bool
		status  Status
		message string
	}{
		{0, false, Succeeded, "puppet exited 0 (no changes)"},
		{2, false, Succeeded, "puppet exited 2 (changes applied)"},
		{1, false, Failed, "puppet exited 1"},
		{4, false, Failed, "puppet exited 4 (failures)"},
		{6, false, Failed, "puppet exited 6 (changes and failures)"},
		{0, true, Succeeded, "puppet exited 0 (no changes)"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("exit %d noop %v", tt.code, tt.noop), func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, "code"), []byte(fmt.Sprint(tt.code)), 0o644)
			tk := task("puppet", "puppet_manifest", "manifests/site.pp", "puppet_modules", "/m1:modules", "cwd", cwd, "retries", 0.0)
			tk.Noop = tt.noop
			r := e.Run(t.Context(), tk)
			if r.Status != tt.status || r.Message != tt.message || string(r.Output) != "puppet output\n" {
				t.Errorf("Run: %s %q %q, want %s %q", r.Status, r.Message, r.Output, tt.status, tt.message)
			}
			args, _ := os.ReadFile(filepath.Join(dir, "args"))
			// A module directory relative to cwd is made absolute there.
			want := "apply\n--detailed-exitcodes\n--modulepath=/m1:" + cwd + "/modules\n" + cwd + "/manifests/site.pp\n"
			if tt.noop {
				want = "apply\n--detailed-exitcodes\n--modulepath=/m1:" + cwd + "/modules\n--noop\n" + cwd + "/manifests/site.pp\n"
			}
			if string(args) != want {
				t.Errorf("puppet's arguments:\n%s\nwant\n%s", args, want)
			}
			if wd, _ := os.ReadFile(filepath.Join(dir, "cwd")); string(wd) != cwd+"\n" {
				t.Errorf("puppet ran in %q, want %q", wd, cwd)
			}
		})
	}
}

// TestNoop: a noop run runs puppet with --noop (TestPuppet) and skips every
// other type without running it, overrides included.
func TestNoop(t *testing.T) {
	dir := t.TempDir()
	e := newTestExec(t, func(c *Config) {
		c.Overrides = map[string][]string{"ansible": {"/bin/sh", "-c", "touch " + dir + "/override"}}
	})
	for _, tk := range []Task{
		shell("touch " + dir + "/shell"),
		task("upload_file", "path", dir+"/upload", "data", "x"),
		task("copy_files", "files", []any{map[string]any{"src": "/etc/hostname", "dst": dir + "/copy"}}),
		task("sync", "src", "/etc/hostname", "dst", dir+"/sync"),
		task("reboot"),
		task("ansible"),
		task("stage"),
	} {
		tk.Noop = true
		r := e.Run(t.Context(), tk)
		if r.Status != Skipped || r.Message != "noop run" || r.Attempts != 0 {
			t.Errorf("%s: %+v, want skipped \"noop run\"", tk.Type, r)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a noop run wrote %v", entries)
	}
	if exists(filepath.Join(e.cfg.StateDir, rebootFile)) {
		t.Error("a noop run wrote the reboot marker")
	}
}

// TestTimeoutKillsTheGroup: at its timeout the task fails and its whole
// process group ends, a child in the background too; SIGKILL follows
// SIGTERM for a group that ignores it.
func TestTimeoutKillsTheGroup(t *testing.T) {
	for _, tt := range []struct{ name, trap string }{
		{"SIGTERM", ""},
		{"SIGKILL after the grace", "trap '' TERM; "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestExec(t, nil)
			dir := t.TempDir()
			cmd := tt.trap + "sleep 1000 & echo $! > child; echo $$ > leader; wait"
			start := time.Now()
			r := e.Run(t.Context(), shell(cmd, "cwd", dir, "timeout", 0.5, "retries", 0.0))
			took := time.Since(start)
			if r.Status != Failed || r.Message != "timed out after 0.5s" || r.Attempts != 1 {
				t.Errorf("Run: %+v", r)
			}
			for _, f := range []string{"leader", "child"} {
				if pid := readPid(t, filepath.Join(dir, f)); !dead(pid) {
					t.Errorf("the %s (%d) still runs", f, pid)
				}
			}
			if exists(filepath.Join(e.cfg.StateDir, runningFile)) {
				t.Error("running.json is left after the group ended")
			}
			if took > 5*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}
}

// TestCancelStopsTheGroup: Run's ctx done stops the command's group and
// fails the task at once, with no further attempt.
func TestCancelStopsTheGroup(t *testing.T) {
	w := newSignalWriter("started\n")
	e := newTestExec(t, func(c *Config) { c.Journal = w })
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan Result)
	go func() {
		done <- e.Run(ctx, shell(waitRecord(e)+"sleep 1000 & echo $! > child; echo started; wait", "cwd", dir, "retries", 3.0))
	}()
	<-w.seen
	if !exists(filepath.Join(e.cfg.StateDir, runningFile)) {
		t.Error("no running.json while the command runs")
	}
	cancel()
	r := <-done
	if r.Status != Failed || r.Message != msgStopped || r.Attempts != 1 {
		t.Errorf("Run: %+v", r)
	}
	if pid := readPid(t, filepath.Join(dir, "child")); !dead(pid) {
		t.Errorf("the child %d still runs", pid)
	}
}

// TestRunningRecord: while a command runs, running.json names its task,
// its process group (the leader's pid), the boot and the leader's start.
func TestRunningRecord(t *testing.T) {
	dir := t.TempDir()
	w := newSignalWriter("started\n")
	e := newTestExec(t, func(c *Config) { c.Journal = w })
	go func() {
		<-w.seen
		var rec runningRecord
		found, err := e.readRecord(runningFile, &rec)
		if err != nil || !found {
			t.Errorf("running.json: found %v, %v", found, err)
		}
		start, _ := procStart(rec.PGID)
		leader := readPid(t, filepath.Join(dir, "leader"))
		if rec.Task != "t-shell" || rec.Type != "shell" || rec.PGID != leader || rec.BootID != "boot-1" || rec.ProcStart != start || rec.Started.IsZero() {
			t.Errorf("running.json: %+v, leader %d", rec, leader)
		}
		os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	}()
	r := e.Run(t.Context(), shell(waitRecord(e)+"echo $$ > leader; echo started; while [ ! -e go ]; do sleep 0.01; done", "cwd", dir))
	if r.Status != Succeeded {
		t.Fatalf("Run: %+v", r)
	}
	if exists(filepath.Join(e.cfg.StateDir, runningFile)) {
		t.Error("running.json is left after the command ended")
	}
}

// waitRecord is shell code that waits until the executor has written
// running.json (just after it started the command), or exits 99 after
// about 20 s.
func waitRecord(e *testExec) string {
	return "i=0; while [ ! -e '" + filepath.Join(e.cfg.StateDir, runningFile) + "' ]; do [ $i -lt 2000 ] || exit 99; i=$((i+1)); sleep 0.01; done; "
}

// TestRetries: a failed attempt runs again after its interval while
// retries remain; the intervals are the task's; the output keeps every
// attempt.
func TestRetries(t *testing.T) {
	count := `n=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count; echo "try $n"; `
	tests := []struct {
		name     string
		task     func(dir string) Task
		status   Status
		message  string
		attempts int
		slept    []time.Duration
	}{
		{"succeeds at the third", func(d string) Task { return shell(count+"[ $n -ge 3 ]", "cwd", d, "retries", 5.0, "interval", 7.0) },
			Succeeded, "the command exited 0 (attempt 3 of 6)", 3, []time.Duration{7 * time.Second, 7 * time.Second}},
		{"fails every time", func(d string) Task { return shell(count+"exit 1", "cwd", d, "retries", 1.0, "interval", 0.5) },
			Failed, "the command exited 1 (attempt 2 of 2)", 2, []time.Duration{500 * time.Millisecond}},
		{"astute's default: two retries, 2 s apart", func(d string) Task { return shell(count+"exit 1", "cwd", d) },
			Failed, "the command exited 1 (attempt 3 of 3)", 3, []time.Duration{2 * time.Second, 2 * time.Second}},
		{"no retries", func(d string) Task { return shell(count+"exit 1", "cwd", d, "retries", 0.0) },
			Failed, "the command exited 1", 1, nil},
		{"a timeout is retried", func(d string) Task {
			return shell(count+`[ $n -ge 2 ] || exec sleep 1000`, "cwd", d, "retries", 1.0, "timeout", 0.3, "interval", 0.0)
		}, Succeeded, "the command exited 0 (attempt 2 of 2)", 2, []time.Duration{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestExec(t, nil)
			dir := t.TempDir()
			r := e.Run(t.Context(), tt.task(dir))
			if r.Status != tt.status || r.Message != tt.message || r.Attempts != tt.attempts {
				t.Errorf("Run: %s %q attempts %d, want %s %q %d", r.Status, r.Message, r.Attempts, tt.status, tt.message, tt.attempts)
			}
			if got := e.sleeps(); !reflect.DeepEqual(got, tt.slept) {
				t.Errorf("waited %v, want %v", got, tt.slept)
			}
			if n := readPid(t, filepath.Join(dir, "count")); n != tt.attempts {
				t.Errorf("ran %d times", n)
			}
			if tt.attempts > 1 && !bytes.Contains(r.Output, []byte("try 1\n\nfuelsync: attempt 1 of ")) {
				t.Errorf("output %q", r.Output)
			}
		})
	}
}

// TestRetryWaitStopped: the agent stopping during the wait between
// attempts ends the task at once.
func TestRetryWaitStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	e := newTestExec(t, func(c *Config) {
		c.sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	})
	r := e.Run(ctx, shell("exit 1", "retries", 3.0))
	if r.Status != Failed || r.Message != msgStopped || r.Attempts != 1 {
		t.Errorf("Run: %+v", r)
	}
}

// TestOutputTail: a command's output beyond MaxOutput keeps its last bytes
// (the count of the others in OutputDropped); the journal gets it all.
func TestOutputTail(t *testing.T) {
	var journal bytes.Buffer
	e := newTestExec(t, func(c *Config) { c.MaxOutput = 1024; c.Journal = &journal })
	r := e.Run(t.Context(), shell("head -c 100000 /dev/zero | tr '\\0' x; echo; echo END"))
	if r.Status != Succeeded || len(r.Output) != 1024 || !bytes.HasSuffix(r.Output, []byte("x\nEND\n")) || r.OutputDropped != 100005-1024 {
		t.Errorf("Run: %s, %d bytes of output ending %q, %d dropped", r.Status, len(r.Output), r.Output[max(0, len(r.Output)-10):], r.OutputDropped)
	}
	if journal.Len() != 100005 {
		t.Errorf("the journal got %d bytes, want 100005", journal.Len())
	}
}

// TestTail: the tail buffer keeps the last max bytes whatever the writes'
// sizes, in at most 2×max bytes, and starts at a UTF-8 character.
func TestTail(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"under the bound", []string{"ab", "cd"}, "abcd"},
		{"exactly the bound", []string{"abcdefgh"}, "abcdefgh"},
		{"one large write", []string{"0123456789abcdef"}, "89abcdef"},
		{"many small writes", strings.Split("0123456789abcdefghij", ""), "cdefghij"},
		{"a large write after small ones", []string{"ab", "cd", "0123456789"}, "23456789"},
		{"small after large", []string{"0123456789", "xy"}, "456789xy"},
		{"cut inside a character", []string{"aaaaaa", "é", "bcdefgh"}, "bcdefgh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTail(8, nil)
			total := 0
			for _, w := range tt.writes {
				tl.Write([]byte(w))
				total += len(w)
				if cap(tl.buf) > 16 {
					t.Fatalf("buffer of %d bytes", cap(tl.buf))
				}
			}
			got, dropped := tl.tail()
			if string(got) != tt.want || dropped != int64(total-len(tt.want)) {
				t.Errorf("tail %q (%d dropped), want %q (%d)", got, dropped, tt.want, total-len(tt.want))
			}
		})
	}
}

// TestMessageBounded: a message is one line of at most MaxMessage bytes.
func TestMessageBounded(t *testing.T) {
	e := newTestExec(t, nil)
	params := map[string]any{}
	for i := range 30 {
		params[fmt.Sprintf("%d\n%s", i, strings.Repeat("é", 100))] = "\x00"
	}
	r := e.Run(t.Context(), Task{ID: "x", Type: "skipped", Parameters: params})
	if len(r.Message) > MaxMessage || strings.ContainsAny(r.Message, "\n\r") || !strings.HasSuffix(r.Message, "…") {
		t.Errorf("message of %d bytes: %q", len(r.Message), r.Message)
	}
}

// TestOverride: an override runs instead of the built-in (or for a type
// with none), with the task as JSON on its standard input and in the task
// file, and FUELSYNC_TASK_ID, _TYPE, _FILE and _NOOP; exit 0 is success.
func TestOverride(t *testing.T) {
	dir := t.TempDir()
	script := `cat > stdin.json; cp "$FUELSYNC_TASK_FILE" file.json; echo "$FUELSYNC_TASK_ID $FUELSYNC_TASK_TYPE $FUELSYNC_NOOP $FUELSYNC_TASK_FILE" > env; exit $(cat code)`
	e := newTestExec(t, func(c *Config) {
		c.Overrides = map[string][]string{"puppet": {"/bin/sh", "-c", script}, "ansible": {"/bin/sh", "-c", script}}
	})
	for _, tt := range []struct {
		task    Task
		code    string
		status  Status
		message string
	}{
		{Task{ID: "netconfig", Type: "puppet", Noop: true, Parameters: map[string]any{"puppet_manifest": "/x.pp", "cwd": dir, "retries": 0.0, "extra": []any{"a", 1.0}}}, "0", Succeeded, "the override command exited 0"},
		{Task{ID: "play", Type: "ansible", Parameters: map[string]any{"playbook": "site.yml", "cwd": dir}}, "1", Failed, "the override command exited 1"},
	} {
		os.WriteFile(filepath.Join(dir, "code"), []byte(tt.code), 0o644)
		r := e.Run(t.Context(), tt.task)
		if r.Status != tt.status || r.Message != tt.message {
			t.Errorf("%s: %s %q, want %s %q", tt.task.ID, r.Status, r.Message, tt.status, tt.message)
		}
		want, _ := json.Marshal(tt.task)
		for _, f := range []string{"stdin.json", "file.json"} {
			if got, _ := os.ReadFile(filepath.Join(dir, f)); !bytes.Equal(got, want) {
				t.Errorf("%s: %s\nwant %s", f, got, want)
			}
		}
		noop := map[bool]string{true: "1", false: "0"}[tt.task.Noop]
		taskFile := filepath.Join(e.cfg.StateDir, taskFile)
		if env, _ := os.ReadFile(filepath.Join(dir, "env")); string(env) != fmt.Sprintf("%s %s %s %s\n", tt.task.ID, tt.task.Type, noop, taskFile) {
			t.Errorf("environment %q", env)
		}
		if exists(taskFile) {
			t.Error("the task file is left after the command")
		}
	}
}

// TestNew: New's checks and defaults.
func TestNew(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no state directory", Config{}, "the state directory is required"},
		{"an override of a bad type", Config{StateDir: t.TempDir(), Overrides: map[string][]string{"a b": {"x"}}}, `an override's task type "a b"`},
		{"an empty override", Config{StateDir: t.TempDir(), Overrides: map[string][]string{"puppet": nil}}, "the override for puppet: no program"},
		{"an empty program", Config{StateDir: t.TempDir(), Puppet: []string{""}}, "the puppet command: no program"},
		{"a NUL in a command", Config{StateDir: t.TempDir(), Reboot: []string{"a\x00"}}, "the reboot command: a NUL byte"},
		{"a negative output bound", Config{StateDir: t.TempDir(), MaxOutput: -1}, "the output bound -1"},
		{"a huge output bound", Config{StateDir: t.TempDir(), MaxOutput: 1 << 30}, "the output bound"},
		{"a negative grace", Config{StateDir: t.TempDir(), KillGrace: -1}, "the kill grace -1ns is negative"},
	} {
		if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New: %v, want %q", tt.name, err, tt.want)
		}
	}
	dir := filepath.Join(t.TempDir(), "a", "state")
	e, err := New(Config{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the state directory: %v %v", fi, err)
	}
	c := e.cfg
	if strings.Join(c.Puppet, " ") != "puppet apply --detailed-exitcodes" || strings.Join(c.Reboot, " ") != "shutdown -r now" ||
		strings.Join(c.Rsync, " ") != "rsync" || c.MaxOutput != 16<<10 || c.KillGrace != 10*time.Second {
		t.Errorf("defaults: %+v", c)
	}
}

// TestRoot: with Config.Root, every absolute path of a task is taken under
// it: cwd, the manifest, the modules, a file written.
func TestRoot(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	bin := filepath.Join(state, "puppet")
	os.WriteFile(bin, []byte("#!/bin/sh\necho \"$PWD $*\" > "+filepath.Join(state, "args")+"\n"), 0o755)
	os.MkdirAll(filepath.Join(root, "etc/fuel/plugins/p-1.0"), 0o755)
	e, err := New(Config{StateDir: filepath.Join(state, "x"), Root: root, Puppet: []string{bin}})
	if err != nil {
		t.Fatal(err)
	}
	r := e.Run(t.Context(), task("puppet", "puppet_manifest", "m.pp", "puppet_modules", "modules:/etc/puppet/modules", "cwd", "/etc/fuel/plugins/p-1.0", "retries", 0.0))
	if r.Status != Succeeded {
		t.Fatalf("puppet: %s %s", r.Status, r.Message)
	}
	args, _ := os.ReadFile(filepath.Join(state, "args"))
	cwd := filepath.Join(root, "etc/fuel/plugins/p-1.0")
	if want := cwd + " --modulepath=" + cwd + "/modules:" + root + "/etc/puppet/modules " + cwd + "/m.pp\n"; string(args) != want {
		t.Errorf("puppet ran as\n%s\nwant\n%s", args, want)
	}
	r = e.Run(t.Context(), task("upload_file", "path", "/etc/x.conf", "data", "hello"))
	if data, err := os.ReadFile(filepath.Join(root, "etc/x.conf")); r.Status != Succeeded || string(data) != "hello" {
		t.Errorf("upload_file under the root: %s %s, %q %v", r.Status, r.Message, data, err)
	}
}
