package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/state"
)

// openWorkdir opens the work directory g.workdir with the state where g.state
// says: etcd (with the --etcd-* flags), or the work directory itself. The
// caller closes it.
func openWorkdir(c *cli.Context, g *globals) (*state.Workdir, error) {
	if g.workdirErr != nil {
		return nil, g.workdirErr
	}
	w := state.Open(g.workdir)
	w.Warn = func(msg string) { warnf(c.App.ErrWriter, g, "%s", msg) }
	if g.state == "" {
		return w, nil
	}
	if c.Bool("reinit") {
		return nil, &exitError{code: 1, msg: "--reinit starts the work directory's own state over; with --state the state is on etcd, where it cannot be damaged that way: fix or push it there (fuelsync state push); nothing was changed"}
	}
	cfg, err := state.ParseURL(g.state)
	if err != nil {
		return nil, &exitError{code: 1, msg: "--state: " + err.Error()}
	}
	cfg.CACert, cfg.Cert, cfg.Key = globalString(c, "etcd-cacert"), globalString(c, "etcd-cert"), globalString(c, "etcd-key")
	cfg.LockTTL = globalDuration(c, "etcd-lock-ttl")
	if cfg.LockTTL != 0 && cfg.LockTTL < 2e9 {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("--etcd-lock-ttl %s is too short: etcd's leases last whole seconds, at least 2s here", cfg.LockTTL)}
	}
	if f := globalString(c, "etcd-auth-file"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, &exitError{code: 1, msg: "--etcd-auth-file: " + err.Error()}
		}
		user, password, ok := strings.Cut(strings.TrimRight(string(data), "\r\n"), ":")
		if !ok || user == "" || strings.Contains(password, "\n") {
			return nil, &exitError{code: 1, msg: fmt.Sprintf("--etcd-auth-file %s must hold one line, USER:PASSWORD", f)}
		}
		cfg.User, cfg.Password = user, password
	}
	if !state.HasBackend("etcd") {
		return nil, dispatch(c, "the state on etcd")
	}
	e, err := state.OpenEtcd(*cfg)
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	w.Backend = e
	return w, nil
}

func stateCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "state",
		Usage: "show, pull or push the applied state (move it between the work directory and etcd)",
		Description: "The state is kept in the work directory (the default) or on etcd (--state\n" +
			"etcd://host:2379/prefix, or state: in fuelsync.yaml). To move it, pull it from one and\n" +
			"push it to the other:\n\n" +
			"  fuelsync state pull > state.json\n" +
			"  fuelsync --state etcd://127.0.0.1:2379/fuelsync state push state.json\n\n" +
			"The applied artifacts stay in the work directory either way.",
		HideHelpCommand: true,
		OnUsageError:    usageError,
		Subcommands: []*cli.Command{
			stateShowCommand(stdout, stderr),
			statePullCommand(stdout, stderr),
			statePushCommand(stdout, stderr),
		},
	}
}

// stateShowCommand is fuelsync state show: what the applied state records.
func stateShowCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "show",
		Usage: "summarise the applied state: lineage, serial, revision, clusters, lock holder",
		Description: "Prints what the applied state records: its lineage and serial, the revision applied,\n" +
			"each cluster's deployed nodes, and (with the state on etcd) who holds the lock.",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Flags:        []cli.Flag{formatFlag()},
		Action: func(c *cli.Context) error {
			return withReadState(c, stdout, stderr, func(g *globals, w *state.Workdir, st *state.State) error {
				var holder state.LockInfo
				if e, ok := w.Backend.(state.Coordinator); ok {
					holder = e.Holder(c.Context)
				}
				return stateView(stdout, g, w, st, holder)
			})
		},
	}
}

// statePullCommand is fuelsync state pull: the state document as stored.
func statePullCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "pull",
		Usage: "print the applied state as JSON (for state push, or to keep a copy)",
		Description: "Writes the applied state document to stdout, exactly as stored, for state push into\n" +
			"another backend or to keep a copy.",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			return withReadState(c, stdout, stderr, func(g *globals, w *state.Workdir, st *state.State) error {
				if st.Serial == 0 {
					return &exitError{code: 1, msg: fmt.Sprintf("%s holds no state: nothing was applied", w.StateName())}
				}
				return writeJSON(stdout, st)
			})
		},
	}
}

// statePushCommand is fuelsync state push FILE: a pulled state stored.
func statePushCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "push",
		Usage:     "store a pulled state (FILE, or - for stdin) as the applied state",
		ArgsUsage: "FILE",
		Description: "Refuses a state of another lineage than the stored one, or an older serial; a\n" +
			"state equal to the stored one changes nothing. Into the work directory, the applied\n" +
			"set of the state's serial must be there with the files the state names.",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "lock-timeout", Usage: "wait up to `DURATION` for the lock", DefaultText: "fail at once"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return &exitError{code: 1, msg: "state push takes one argument: the state file (- for stdin)"}
			}
			return withState(c, stdout, stderr, func(g *globals, w *state.Workdir) error {
				st, err := readStateFile(c.Args().First())
				if err != nil {
					return err
				}
				lock, err := w.Lock(c.Context, "state push", c.Duration("lock-timeout"))
				if err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				defer lock.Unlock()
				changed, err := state.Push(w, lock, st)
				if err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				return pushedView(g, w, st, changed)
			})
		},
	}
}

// readStateFile reads and parses the state document in file name (- for
// stdin), at most one byte over state.MaxSize (state.Parse refuses it).
func readStateFile(name string) (*state.State, error) {
	var in io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, &exitError{code: 1, msg: err.Error()}
		}
		defer f.Close()
		in = f
	}
	data, err := io.ReadAll(io.LimitReader(in, state.MaxSize+1))
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	st, err := state.Parse(name, data)
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	return st, nil
}

// pushedView says what state push did: serial st pushed to w's state, or
// nothing changed (it held it already).
func pushedView(g *globals, w *state.Workdir, st *state.State, changed bool) error {
	if g.format == formatJSON {
		return writeJSON(g.stdout, map[string]any{"format_version": formatVersion, "state": w.StateName(),
			"serial": st.Serial, "lineage": st.Lineage, "changed": changed})
	}
	if !g.quiet {
		if changed {
			fmt.Fprintf(g.stdout, "Pushed serial %d (lineage %s) to %s.\n", st.Serial, st.Lineage, w.StateName())
		} else {
			fmt.Fprintf(g.stdout, "%s already holds serial %d of lineage %s; nothing changed.\n", w.StateName(), st.Serial, st.Lineage)
		}
	}
	return nil
}

// withState runs f with the globals and the work directory, from the
// preamble of every command that opens it (openOpEnv: settings read, backend
// opened, closed after).
func withState(c *cli.Context, stdout, stderr io.Writer, f func(*globals, *state.Workdir) error) error {
	env, err := openOpEnv(c, stdout, stderr)
	if err != nil {
		return err
	}
	defer env.close()
	if c.Command.Name != "push" && c.NArg() > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("state %s takes no arguments (got %q)", c.Command.Name, c.Args().First())}
	}
	w, err := env.workdir()
	if err != nil {
		return err
	}
	return f(env.g, w)
}

// withReadState is withState with the state read.
func withReadState(c *cli.Context, stdout, stderr io.Writer, f func(*globals, *state.Workdir, *state.State) error) error {
	return withState(c, stdout, stderr, func(g *globals, w *state.Workdir) error {
		st, err := w.ReadState()
		if err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		return f(g, w, st)
	})
}

// stateView prints what state show shows: the state's summary, as text or
// JSON.
func stateView(stdout io.Writer, g *globals, w *state.Workdir, st *state.State, holder state.LockInfo) error {
	if g.format == formatJSON {
		doc := map[string]any{"backend": w.StateName(), "lineage": st.Lineage, "serial": st.Serial,
			"revision": st.Revision, "tool_version": st.ToolVersion, "artifacts": len(st.Artifacts),
			"clusters": st.Clusters, "lock_holder": holderOrNil(holder)}
		if dir, ok := localSet(w, st.Serial); ok && st.Serial > 0 {
			doc["artifacts_path"] = dir
		}
		return writeJSON(stdout, doc)
	}
	showState(stdout, w, st, holder)
	return nil
}

// localSet returns the directory of the applied set serial in this work
// directory, and whether it is there: with the state on etcd, the sets are in
// the work directory of each serve replica (or apply) that wrote them.
func localSet(w *state.Workdir, serial int64) (string, bool) {
	dir := w.SetDir(serial)
	fi, err := os.Stat(dir)
	return dir, err == nil && fi.IsDir()
}

func holderOrNil(h state.LockInfo) any {
	if h.PID == 0 {
		return nil
	}
	return h
}

func showState(out io.Writer, w *state.Workdir, st *state.State, holder state.LockInfo) {
	fmt.Fprintf(out, "State:        %s\n", w.StateName())
	if st.Serial == 0 {
		fmt.Fprintln(out, "Nothing applied yet.")
	} else {
		fmt.Fprintf(out, "Lineage:      %s\n", st.Lineage)
		fmt.Fprintf(out, "Serial:       %d\n", st.Serial)
		fmt.Fprintf(out, "Revision:     %s\n", st.Revision)
		fmt.Fprintf(out, "Tool version: %s\n", st.ToolVersion)
		if dir, ok := localSet(w, st.Serial); ok {
			fmt.Fprintf(out, "Artifacts:    %d files in %s\n", len(st.Artifacts), dir)
		} else {
			fmt.Fprintf(out, "Artifacts:    %d files, in the work directory of each fuelsync that applied or re-rendered serial %d (not in %s)\n",
				len(st.Artifacts), st.Serial, w.Dir)
		}
		names := make([]string, 0, len(st.Clusters))
		for name := range st.Clusters {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			cs := st.Clusters[name]
			var prim []string
			for tag, node := range cs.Primary {
				prim = append(prim, tag+"="+node)
			}
			slices.Sort(prim)
			line := fmt.Sprintf("Cluster %s: %d deployed nodes", name, len(cs.Nodes))
			if len(prim) > 0 {
				line += "; primary " + strings.Join(prim, ", ")
			}
			fmt.Fprintln(out, line)
		}
	}
	if holder.PID != 0 {
		fmt.Fprintf(out, "Locked by pid %d (%s, %s@%s, since %s)\n", holder.PID, holder.Operation, holder.User, holder.Host, holder.Since)
	}
}
