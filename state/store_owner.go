package state

// Whose directory it is. fuelsync removes files in its work directory (sets
// beyond the newest Keep, leftovers of crashed runs, objects and trees no set
// links), so it must never take another directory for one: a git directory
// (workdir: .git in a repository's fuelsync.yaml), a bare repository, a home
// directory. A work directory is fuelsync's when it holds the marker file
// .fuelsync-workdir, which fuelsync writes under the lock into a directory
// that is new, empty, or laid out exactly as a work directory is (one written
// by a fuelsync from before the marker: it is adopted). Any other directory is
// refused before anything is written into it, the lock file included
// (NotWorkdirError). And even in its own work directory, fuelsync removes
// only names of its own layout: objects/<2 hex>/<64 hex starting with them>,
// trees/<32 hex>, nodesets/<32 hex>, artifacts/<serial>, and its temporary
// names.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MarkerName is the file that makes a directory fuelsync's work directory.
const MarkerName = ".fuelsync-workdir"

// markerText is the marker's content; its first line is what is checked.
const markerText = "fuelsync work directory, format 1\n" +
	"fuelsync removes the files of its own layout here (applied sets, objects, trees); do not keep other files in this directory.\n"

// NotWorkdirError says a directory is not a work directory fuelsync may
// write into: it has no marker, and it holds Entry, which fuelsync does not
// make there. Nothing was written into it or removed from it.
type NotWorkdirError struct {
	Dir   string
	Entry string // relative to Dir
	Why   string // what Entry is, or why it does not fit
	// Marked says Dir has the marker, but Entry (artifacts/, objects/,
	// trees/ or nodesets/) is not a directory.
	Marked bool
}

func (e *NotWorkdirError) Error() string {
	if e.Entry == "." {
		return fmt.Sprintf("refusing to use %s as the work directory: it is %s. Choose another --workdir. Nothing was changed", e.Dir, e.Why)
	}
	if e.Marked {
		return fmt.Sprintf("refusing to use the work directory %s: its %s is %s: fuelsync removes files there and follows no link to do it. Remove %s (it is made again). Nothing was changed",
			e.Dir, e.Entry, e.Why, filepath.Join(e.Dir, e.Entry))
	}
	return fmt.Sprintf("refusing to use %s as the work directory: it has no %s marker and it holds %s (%s), which fuelsync does not make there. "+
		"fuelsync removes files in its work directory, so it takes only a new or empty directory, or one of its own. "+
		"Choose another --workdir; or, if %s is the work directory of an older fuelsync, move %s out of it and run again (it is adopted then). Nothing was changed",
		e.Dir, MarkerName, e.Entry, e.Why, e.Dir, e.Entry)
}

// hasMarker reports whether dir holds fuelsync's marker (a regular file whose
// first line is the marker's).
func hasMarker(dir string) bool {
	p := filepath.Join(dir, MarkerName)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return false
	}
	data, err := os.ReadFile(p)
	first, _, _ := strings.Cut(markerText, "\n")
	return err == nil && strings.HasPrefix(string(data), first+"\n")
}

// checkOwnable reports whether fuelsync may use w.Dir as its work directory,
// without changing anything: nil when it does not exist, holds the marker, or
// is laid out as a work directory (empty included); a *NotWorkdirError
// otherwise.
func (w *Workdir) checkOwnable() error {
	fi, err := os.Lstat(w.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A link to the work directory: what it points to is checked.
		if fi, err = os.Stat(w.Dir); err != nil {
			return err
		}
	}
	if !fi.IsDir() {
		return &NotWorkdirError{Dir: w.Dir, Entry: ".", Why: kindOf(fi.Mode().Type()) + ", not a directory"}
	}
	if hasMarker(w.Dir) {
		// Its own, but what it removes in must be its own too: a symlink
		// in place of artifacts/ (a work directory inside a hostile
		// repository's working tree) would point the pruning elsewhere.
		for _, sub := range []string{"artifacts", "objects", "trees", "nodesets"} {
			if fi, err := os.Lstat(filepath.Join(w.Dir, sub)); err == nil && !fi.IsDir() {
				return &NotWorkdirError{Dir: w.Dir, Entry: sub, Why: kindOf(fi.Mode().Type()) + ", not a directory", Marked: true}
			}
		}
		return nil
	}
	return layoutProblem(w.Dir)
}

// CheckUsable reports, without changing anything, whether fuelsync may use
// w.Dir as its work directory (a *NotWorkdirError when it may not), so that a
// daemon stops at start-up rather than at each reconcile.
func (w *Workdir) CheckUsable() error { return w.checkOwnable() }

// claim makes w.Dir fuelsync's work directory: it creates it, or checks that
// it may (checkOwnable) and writes the marker when it is missing. Only a
// claimed work directory is written into or pruned. The caller holds the
// lock (a replica's follower, which takes none, is the only writer of its own
// work directory).
func (w *Workdir) claim() error {
	if w.claimed.Load() {
		return nil
	}
	if err := w.checkOwnable(); err != nil {
		return err
	}
	if !hasMarker(w.Dir) {
		if err := os.MkdirAll(w.Dir, 0o755); err != nil {
			return err
		}
		// Not a numbered step of a publish: a crash here leaves no marker,
		// or a partial one, and the next run writes it again (the layout
		// allows the name).
		p := filepath.Join(w.Dir, MarkerName)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("marking %s as fuelsync's work directory: %w", w.Dir, err)
		}
		_, err = f.WriteString(markerText)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = syncDirQuiet(w.Dir)
		}
		if err != nil {
			return fmt.Errorf("marking %s as fuelsync's work directory: %w", w.Dir, err)
		}
	}
	w.claimed.Store(true)
	return nil
}

// syncDirQuiet fsyncs dir (not a numbered step).
func syncDirQuiet(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// LooksLikeWorkdir reports whether dir is, or looks like, a work directory:
// it has the marker, or an artifacts/ directory beside state.json, lock or
// artifacts/current (render --out refuses such a directory and anything in
// it).
func LooksLikeWorkdir(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, MarkerName)); err == nil {
		return true
	}
	fi, err := os.Lstat(filepath.Join(dir, "artifacts"))
	if err != nil || !fi.IsDir() {
		return false
	}
	for _, n := range []string{"state.json", "lock", filepath.Join("artifacts", "current")} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// layoutProblem checks that dir holds only what fuelsync makes in a work
// directory, named and typed as it makes them (an older fuelsync's work
// directory, or an empty one); nil when it does, a *NotWorkdirError naming
// the first entry that does not fit otherwise. The applied sets and trees are
// not read into (their names and types are checked), the objects are (each
// name), the remote repository's cache not at all.
func layoutProblem(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if why := topEntryProblem(e.Name(), e.Type()); why != "" {
			return &NotWorkdirError{Dir: dir, Entry: e.Name(), Why: why}
		}
	}
	if err := subdirProblem(dir, "artifacts", isArtifactsEntry); err != nil {
		return err
	}
	for _, sub := range []string{"trees", "nodesets"} {
		err = subdirProblem(dir, sub, func(name string, t fs.FileMode) bool {
			return t.IsDir() && (isTreeID(name) || isTempName(name, ".tmp-", treeIDLen, true))
		})
		if err != nil {
			return err
		}
	}
	var fans []string
	err = subdirProblem(dir, "objects", func(name string, t fs.FileMode) bool {
		fans = append(fans, name)
		return t.IsDir() && isLowerHex(name, 2)
	})
	if err != nil {
		return err
	}
	for _, fan := range fans {
		err := subdirProblem(dir, filepath.Join("objects", fan), func(name string, t fs.FileMode) bool {
			return t.IsRegular() && (isObjectName(fan, name) || isObjectTempName(fan, name))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// topEntryProblem is why the entry name of type t does not fit at the top of
// a work directory, or "" when it does.
func topEntryProblem(name string, t fs.FileMode) string {
	switch {
	case name == MarkerName || name == "lock":
		if !t.IsRegular() {
			return "not a regular file"
		}
	case name == "state.json":
		if !t.IsRegular() && t&fs.ModeSymlink == 0 {
			return "neither a file nor a link"
		}
	case name == "artifacts" || name == "objects" || name == "trees" || name == "nodesets" || name == "cache":
		if !t.IsDir() {
			return "not a directory"
		}
	case isTempName(name, ".link-state.json-", 8, false) && t&fs.ModeSymlink != 0:
	case strings.HasPrefix(name, "state.json.tmp-") && t.IsRegular(): // fuelsync's first releases
	default:
		return kindOf(t)
	}
	return ""
}

// subdirProblem checks that every entry of dir's subdirectory sub (when
// there is one) fits (ok): nil when they do, a *NotWorkdirError naming the
// first one that does not otherwise.
func subdirProblem(dir, sub string, ok func(name string, t fs.FileMode) bool) error {
	entries, err := os.ReadDir(filepath.Join(dir, sub))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !ok(e.Name(), e.Type()) {
			return &NotWorkdirError{Dir: dir, Entry: filepath.Join(sub, e.Name()), Why: kindOf(e.Type())}
		}
	}
	return nil
}

// isArtifactsEntry reports whether the entry name of type t fits in
// artifacts/: an applied set, current, or a set or link being made.
func isArtifactsEntry(name string, t fs.FileMode) bool {
	switch {
	case isSerialName(name):
		return t.IsDir()
	case name == "current":
		return t&fs.ModeSymlink != 0
	case isSetTempName(name):
		return t.IsDir()
	case isTempName(name, ".link-current-", 8, false):
		return t&fs.ModeSymlink != 0
	}
	return false
}

func kindOf(t fs.FileMode) string {
	switch {
	case t.IsDir():
		return "a directory"
	case t&fs.ModeSymlink != 0:
		return "a symlink"
	case t.IsRegular():
		return "a file"
	}
	return "a special file"
}

// isSerialName reports whether name is an applied set's: a positive decimal
// serial, written as fuelsync writes it.
func isSerialName(name string) bool {
	n, err := strconv.ParseInt(name, 10, 64)
	return err == nil && n > 0 && strconv.FormatInt(n, 10) == name
}

// isSetTempName reports whether name is a set being written:
// .tmp-<serial>-<digits> (os.MkdirTemp's suffix).
func isSetTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, ".tmp-")
	if !ok {
		return false
	}
	serial, suffix, ok := strings.Cut(rest, "-")
	return ok && isSerialName(serial) && suffix != "" && strings.Trim(suffix, "0123456789") == ""
}

// isTempName reports whether name is prefix, then (when hexID) idLen lowercase
// hex digits and a dash, then 8 lowercase hex digits; without hexID, prefix
// and the 8 digits (idLen ignored).
func isTempName(name, prefix string, idLen int, hexID bool) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	if hexID {
		id, suffix, ok := strings.Cut(rest, "-")
		return ok && isLowerHex(id, idLen) && isLowerHex(suffix, 8)
	}
	return isLowerHex(rest, 8)
}

// isObjectName reports whether name, in objects/<fan>/, is an object: the 64
// lowercase hex digits of a sha256 that begins with fan.
func isObjectName(fan, name string) bool {
	return isLowerHex(name, 64) && strings.HasPrefix(name, fan)
}

// isObjectTempName reports whether name, in objects/<fan>/, is an object
// being written: .tmp-<sha256>-<8 hex>.
func isObjectTempName(fan, name string) bool {
	if !isTempName(name, ".tmp-", 64, true) {
		return false
	}
	return strings.HasPrefix(name[len(".tmp-"):], fan)
}
