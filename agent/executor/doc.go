// Package executor runs one task of a node's rendered graph on the node, as
// Fuel's orchestrator (astute) ran each task type: the piece of `fuelsync
// agent` that turns a dispatched task into processes and files, and says
// how it ended. It imports the standard library only (nothing of fuelsync:
// the agent binary stays small), never prints and never exits; users read
// docs/executors.md.
//
// The API:
//
//	e, err := executor.New(executor.Config{StateDir: dir, Journal: os.Stdout, Log: log})
//	left, err := e.Recover(ctx)      // once, at start: an earlier agent's task (nil: none)
//	err = e.Check(task)              // the parameter checks alone (*CheckError)
//	res := e.Run(ctx, task)          // runs it: res.Status, Message, Output, Attempts
//
// A Task is the task entry of the node's expanded view (id, type,
// parameters, decoded from JSON or YAML: numbers as float64, json.Number or
// Go integers) plus the run's noop flag. Run checks it first (absolute
// paths, no NUL byte, sizes bounded, each parameter of the type it should
// be: a failed check runs nothing), then runs it by type:
//
//   - shell: cmd with /bin/sh -c in cwd (the only type given to a shell);
//   - puppet: Config.Puppet, --modulepath=<puppet_modules>, --noop on a noop
//     run, then puppet_manifest, as argv; exit 0 and 2 are success;
//   - upload_file: data written to path, atomically, with permissions;
//   - copy_files: each of files {src, dst} copied, atomically;
//   - sync: rsync -c -r --delete -l src dst;
//   - reboot: Config.Reboot, then the wait for a new boot id (below);
//   - skipped, stage, group, noop: nothing (skipped);
//   - any type in Config.Overrides: that command instead, with the task as
//     JSON on its standard input and in FUELSYNC_TASK_FILE;
//   - any other type: failed, naming the known ones.
//
// On a noop run puppet runs with --noop and every other type is skipped.
// The common parameters timeout, retries, interval and cwd take astute's
// defaults per type. Output is the last Config.MaxOutput bytes of the
// combined standard output and error, every byte also passed to
// Config.Journal.
//
// Each command runs in a process group of its own, recorded in
// <StateDir>/running.json (task, pgid, start, boot id) from its start until
// its leader has been reaped. At its timeout, or when Run's ctx is done, the
// whole group gets SIGTERM, then SIGKILL after Config.KillGrace. A killed
// agent leaves the record behind: Recover, at the next start, kills a group
// that still runs in the same boot and returns the task, failed ("the agent
// stopped during the task"), for the agent to report. It kills rather than
// waits because nobody can report the old run's result (its output went
// with the agent that read it), a hung command would hold the node for
// ever, and the node's next task must not run beside it.
//
// A reboot task writes <StateDir>/reboot.json (the kernel's boot id and the
// deadline) before it runs the reboot command; the node goes down and the
// agent with it. Recover at the next start reports it succeeded when the
// boot id changed, and failed ("the node did not reboot within Ns") when
// it did not by the deadline. A Run stopped by its ctx while it waits for
// the reboot returns a Result with Deferred set: not to be reported.
package executor
