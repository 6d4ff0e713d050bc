package state

// Unchanged files by their stat (the seal). A publish that keeps most of the
// applied set — a one-node change in a fleet — would otherwise read and hash
// every file it keeps, only to catch one changed in place. Instead, as git
// trusts an index entry whose stat has not changed, a file the applied set
// keeps is linked by its digest without being read when:
//
//   - the state of the applied set records that digest for it;
//   - the set's file (through its node directory's tree) is a regular file
//     and the same inode as its object, objects/<sha[:2]>/<sha> (a hard
//     link), itself a regular file — or, for a file of a node directory the
//     set links through its nodeset, the tree and the nodeset are
//     directories whose mtimes are before the seal too (appliedSet.stat);
//   - its mtime is strictly before the applied set's seal.
//
// The seal of a set (<set>/.seal: the time, in nanoseconds since the Unix
// epoch, as one decimal line) is when the publish that made it began, read
// from the file system's own clock: the publish writes the lock file again
// (stamp) and takes its mtime, before it checks or writes any content. Every
// content that publish puts in the set is checked (read, or kept as above)
// or written after that time, so a file of the set whose mtime is still
// before the seal has not been written since: writing a file sets its mtime
// to the time of the write. An object the publish writes gets an mtime just
// before its seal (set on its temporary file, before it is renamed into
// place), so that the next publish trusts it too; it was written whole,
// after the seal. Equal is not before: on a file system with coarse
// timestamps, a write in the same tick as the seal is not trusted.
//
// Anything else — another inode (a copy, a file replaced), no object, an
// mtime at or after the seal, a set without a seal (written by an older
// fuelsync) — is read, hashed and checked as before, and
// rewritten when it differs. What this does not catch, like git: a file
// written with its mtime set back before the seal (touch -d, or cp -p of an
// older file over it) — a deliberate act; or a write while the system clock
// is set back. A directory's mtime is never the reference: an
// editor's swap file changes it after an in-place edit.

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fuelsync/fuelsync/render"
)

// sealName is the seal of a set, in the set's top directory beside
// .state.json (render makes no name that begins with a dot).
const sealName = ".seal"

// maxSealSize bounds what is read of a seal.
const maxSealSize = 32

// ErrNotStaged is what a publish's link returns for a file whose object the
// stage does not hold and whose applied file cannot be kept by its stat: the
// caller puts its content instead (read, checked and written as before).
var ErrNotStaged = errors.New("no object was staged for it, and the applied set does not hold it unchanged by its stat")

// stamp returns the file system's time now: it writes the lock file's
// content again and returns its mtime (zero when it cannot).
func (l *Lock) stamp() time.Time {
	if l == nil || l.f == nil || len(l.holder) == 0 {
		return time.Time{}
	}
	if _, err := l.f.WriteAt(l.holder, 0); err != nil {
		return time.Time{}
	}
	fi, err := l.f.Stat()
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// newObjectWriter is an object writer for a set published under lock l (nil:
// none; the set gets no seal and its objects keep their mtimes).
func (w *Workdir) newObjectWriter(l *Lock) *objectWriter {
	return &objectWriter{w: w, dirs: map[string]bool{}, since: l.stamp()}
}

// sealFromDir returns objs (a new object writer when nil) with a seal taken
// from dir, a directory just made and still empty, when objs has none: a
// committed set that a replica makes without the writers' lock (WriteSet,
// WriteSetLinked) checks or writes every content after its directory was
// made, so its creation time, by the file system's clock, seals it as a
// publish's stamp does; the apply that follows it then keeps its files by
// their stat too. No seal when dir cannot be read.
func sealFromDir(w *Workdir, objs *objectWriter, dir string) *objectWriter {
	if objs == nil {
		objs = &objectWriter{w: w, dirs: map[string]bool{}}
	}
	if objs.since.IsZero() {
		if fi, err := os.Stat(dir); err == nil {
			objs.since = fi.ModTime()
		}
	}
	return objs
}

// appliedSet is the set a publish follows, whose unchanged files it keeps
// by their stat.
type appliedSet struct {
	w     *Workdir
	set   string // its directory
	seal  time.Time
	sums  map[string]string // path → sha256, as its state records them
	dirs  sync.Map          // directory in the set → its path on disk (or error)
	nodes sync.Map          // node directory in the set → *keptNodeDir (nodeDir)
	trees sync.Map          // a tree's or nodeset's path on disk → *treeStat (treeStat)

	// names are the files of sums, sorted; stats[i] is the stat check of
	// names[i] (stat).
	names []string
	stats []keptStat

	recordedOnce sync.Once
	recorded     map[string]*recordedNodeset // cluster → recordedNodesets
}

// recordedNodeset is a cluster's nodeset as the applied state records its
// node directories: its id, and each node's tree id.
type recordedNodeset struct {
	id    string
	trees map[string]string
}

// recordedNodesets are the nodesets of the applied set's clusters as its
// state records their files, made once, the way the publish that made the
// set made them (linkNodeDirs): each node directory's tree id from its
// files, the nodeset's from its nodes and trees. A cluster with anything
// but node directories in its nodes directory has none.
func (a *appliedSet) recordedNodesets() map[string]*recordedNodeset {
	a.recordedOnce.Do(func() {
		files := map[string][]treeEntry{}
		other := map[string]bool{}
		for name, sum := range a.sums {
			if nd, file, ok := nodeDirOf(name); ok {
				files[nd] = append(files[nd], treeEntry{file, sum})
			} else if c := ClusterOf(name); strings.HasPrefix(name, render.NodesDir(c)+"/") {
				other[c] = true
			}
		}
		nds := slices.Sorted(maps.Keys(files))
		clusters, byCluster := clusterNodeDirs(nds)
		a.recorded = map[string]*recordedNodeset{}
		for _, c := range clusters {
			if other[c] {
				continue
			}
			r := &recordedNodeset{trees: map[string]string{}}
			var entries []nodesetEntry
			for _, i := range byCluster[c] {
				es := files[nds[i]]
				slices.SortFunc(es, func(a, b treeEntry) int { return strings.Compare(a.name, b.name) })
				id := treeID(es)
				r.trees[nodeOf(nds[i])] = id
				entries = append(entries, nodesetEntry{nodeOf(nds[i]), id})
			}
			r.id = nodesetID(entries)
			a.recorded[c] = r
		}
	})
	return a.recorded
}

// recordedTree is the tree of node directory nd of the applied set when its
// cluster's nodes directory links nodeset (a path) and that nodeset is the
// one of the node directories the state records (the same id), unchanged
// since the seal: the publish that made the set found it to link exactly
// those trees after its seal, and its entries were not changed since, so its
// link need not be read.
func (a *appliedSet) recordedTree(nd, nodeset string) (string, bool) {
	c, _, _ := render.ParseNodeDir(nd)
	r := a.recordedNodesets()[c]
	if r == nil || filepath.Base(nodeset) != r.id || filepath.Dir(nodeset) != a.w.nodesets() || !a.unchanged(path.Dir(nd)) {
		return "", false
	}
	id, ok := r.trees[nodeOf(nd)]
	return id, ok
}

// follow makes the applied set of cur the set o keeps files of by their
// stat, when that set has a seal. When the work directory does not hold the
// set of cur (a serve replica that has not made the newest committed set
// yet, or cur nil), it follows the current set, with the state it was made
// of: what makes a file kept is that set's own record of it.
func (o *objectWriter) follow(cur *State) {
	if o.since.IsZero() {
		return
	}
	if cur != nil && cur.Serial > 0 {
		if seal, ok := readSeal(o.w.SetDir(cur.Serial)); ok {
			o.applied = newAppliedSet(o.w, o.w.SetDir(cur.Serial), seal, cur.Artifacts)
			return
		}
		if _, err := os.Lstat(o.w.SetDir(cur.Serial)); err == nil {
			return // the set is here, without a seal
		}
	}
	n := o.w.CurrentSerial()
	if n <= 0 {
		return
	}
	seal, ok := readSeal(o.w.SetDir(n))
	if !ok {
		return
	}
	if st, err := o.w.SetState(n); err == nil && st.Serial == n {
		o.applied = newAppliedSet(o.w, o.w.SetDir(n), seal, st.Artifacts)
	}
}

// newAppliedSet is the applied set in dir, sealed at seal, whose state
// records sums.
func newAppliedSet(w *Workdir, dir string, seal time.Time, sums map[string]string) *appliedSet {
	a := &appliedSet{w: w, set: dir, seal: seal, sums: sums}
	a.names = slices.Sorted(maps.Keys(sums))
	a.stats = make([]keptStat, len(a.names))
	return a
}

// readSeal returns the seal of the set in dir: ok only for a regular file of
// one line of decimal digits, a time after the epoch.
func readSeal(dir string) (time.Time, bool) {
	f, err := openNoFollow(filepath.Join(dir, sealName))
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSealSize {
		return time.Time{}, false
	}
	buf := make([]byte, maxSealSize+1)
	n, _ := f.Read(buf)
	line, ok := strings.CutSuffix(string(buf[:n]), "\n")
	if !ok || line == "" || strings.Trim(line, "0123456789") != "" {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(line, 10, 64)
	if err != nil || ns <= 0 {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// writeSeal writes the seal of the set in dir: when o began.
func (o *objectWriter) writeSeal(dir string) error {
	if o.since.IsZero() {
		return nil
	}
	return writeSynced(filepath.Join(dir, sealName), fmt.Appendf(nil, "%d\n", o.since.UnixNano()))
}

// sealObject gives the new object tmp (not yet renamed into place) an mtime
// before o's seal, so that the next publish keeps it by its stat; nothing
// when o has no seal. A new tree or nodeset (a directory, built whole) gets
// the same, so that the next publish keeps it unread (keptTree,
// nodesetHolds).
func (o *objectWriter) sealObject(tmp string) error {
	if o.since.IsZero() {
		return nil
	}
	return os.Chtimes(tmp, time.Time{}, o.since.Add(-time.Nanosecond))
}

// keep reports whether the applied set's file name is unchanged by its stat
// (see above) and holds sum; the object sum then counts as checked for this
// publish (staged) and is linked without being read.
func (o *objectWriter) keep(name, sum string) bool {
	a := o.applied
	if a == nil || o.w.noLinks.Load() || a.sums[name] != sum || !isLowerHex(sum, 64) {
		return false
	}
	i, found := slices.BinarySearch(a.names, name)
	if !found {
		return false
	}
	st := a.statAt(o.w, i)
	if !st.ok {
		return false
	}
	if !st.inTree {
		_ = o.done.do(sum, func() error { return nil })
		if !o.done.succeeded(sum) {
			return false
		}
	}
	// A tree's file just found to hold sum: the tree's check need not stat
	// it again (treeHolds, through keptAs). One kept in its tree has its
	// object checked only if it is linked elsewhere (checkKeptObject).
	st.kept.Store(true)
	if st.inTree {
		o.keptInTreeN.Add(1)
	}
	return true
}

// checkKeptObject makes sure that the object sum holds it before it is
// linked anywhere (a tree built, a node directory made a real one) when sum
// is the content of a file keep kept in its tree without looking at the
// object: the object is checked when it is that file's inode (a regular
// file, as keep found the file unchanged since the seal), else written anew
// from the kept file's bytes, checked against sum. Nothing for any other
// sum: its object was checked when it was staged or kept.
func (o *objectWriter) checkKeptObject(sum string) error {
	p, ok := o.keptInTree(sum)
	if !ok {
		return nil
	}
	return o.done.do(sum, func() error {
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode().IsRegular() {
			if oi, err := os.Lstat(o.w.objectPath(sum)); err == nil && oi.Mode().IsRegular() && os.SameFile(fi, oi) {
				return nil
			}
		}
		readHook(p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if digest(data) != sum {
			return fmt.Errorf("%s, kept unchanged by its stat, changed during the publish", p)
		}
		return o.ensure(sum, data)
	})
}

// keptInTree is the path of a file of the applied set that keep kept in its
// tree, its object not looked at, whose content is sum. The index of them
// is made from the applied set's stats when first asked, and again when keep
// kept more since.
func (o *objectWriter) keptInTree(sum string) (string, bool) {
	a := o.applied
	if a == nil {
		return "", false
	}
	o.inTreeMu.Lock()
	defer o.inTreeMu.Unlock()
	if n := o.keptInTreeN.Load(); o.inTree == nil || o.inTreeN != n {
		o.inTree, o.inTreeN = map[string]string{}, n // n read before the flags
		for i := range a.stats {
			if st := &a.stats[i]; st.kept.Load() && st.inTree {
				if _, dup := o.inTree[st.sum]; !dup {
					o.inTree[st.sum] = st.p
				}
			}
		}
	}
	p, ok := o.inTree[sum]
	return p, ok
}

// linked are the objects (by sha256) that keep found to be the inodes of
// the applied set's files, linked there besides the store, in a set this
// publish keeps (the applied set is the newest before it), and the contents
// of the files it kept in their trees, whose objects it did not look at.
// The pruning after the publish does not stat them (pruneObjects): one of
// the latter no longer linked (replaced by a copy beside the trees' files)
// stays, as never removed on a guess. Nil for o nil.
func (o *objectWriter) linked() map[string]bool {
	if o == nil {
		return nil
	}
	sums := map[string]bool{}
	if a := o.applied; a != nil {
		for i := range a.stats {
			if st := &a.stats[i]; st.kept.Load() {
				sums[st.sum] = true
			}
		}
	}
	return sums
}

// keptStat is the stat check of an applied file (appliedSet.stat), made once.
type keptStat struct {
	once   sync.Once
	p      string // the file's path on disk
	sum    string // its content, as the applied state records it
	ok     bool
	inTree bool // kept as a file of an unchanged tree, its object not looked at
	// kept says keep kept it: the object of sum, at p (set after once).
	kept atomic.Bool
}

// keptNodeDir is what the files of a node directory of the applied set
// share (appliedSet.nodeDir), found once: where the directory is on disk,
// whether it is a tree the set links through its nodeset, and whether that
// nodeset's and tree's entries are unchanged since the seal.
type keptNodeDir struct {
	once      sync.Once
	dir       string
	inNodeset bool
	unchanged bool
	err       error
	// lo and hi bound the applied set's names in it (names[lo:hi]).
	lo, hi int
}

// treeStat is the lstat of a tree or nodeset the applied set links, made
// once.
type treeStat struct {
	once sync.Once
	fi   fs.FileInfo
	err  error
}

// unchanged reports whether the directory name of the applied set (a
// nodes directory or a node directory, resolved to its nodeset or tree) is
// a directory whose entries have not changed since the seal.
func (a *appliedSet) unchanged(name string) bool {
	dir, err := a.dir(name)
	if err != nil {
		return false
	}
	fi, err := a.treeStat(dir)
	return err == nil && fi.IsDir() && fi.ModTime().Before(a.seal)
}

// treeStat is the lstat of a tree or nodeset dir, made once a publish: by
// keep, which keeps a file of a tree unchanged since the seal, and by the
// tree's check (treeHolds, keptTree).
func (a *appliedSet) treeStat(dir string) (fs.FileInfo, error) {
	v, loaded := a.trees.Load(dir)
	if !loaded {
		v, _ = a.trees.LoadOrStore(dir, &treeStat{})
	}
	t := v.(*treeStat)
	t.once.Do(func() { t.fi, t.err = os.Lstat(dir) })
	return t.fi, t.err
}

// statAt is the stat check of names[i], the applied file name: ok says it is
// unchanged by its stat, a regular file with an mtime before the seal, and either the same inode as
// the object of the digest the applied state records for it, or (inTree) a
// file of a node directory that the applied set links through its nodeset to
// a tree, the entries of both unchanged since the seal (their mtimes are
// before it): the publish that made the set found that nodeset to link that
// tree, and the tree to hold exactly its files, each with its content, after
// its seal (nodesetHolds, keptTree), and neither their entries nor the file's
// inode were written since. p is its path on disk, sum its digest as the
// applied state records it. Each file is checked once, by keep or by
// prefetch, whichever asks first.
func (a *appliedSet) statAt(w *Workdir, i int) *keptStat {
	k := &a.stats[i]
	k.once.Do(func() {
		k.sum = a.sums[a.names[i]]
		k.p, k.ok, k.inTree = a.statFile(w, a.names[i], k.sum)
	})
	return k
}

// nodeDir is where node directory nd of the applied set is on disk, and
// whether it is a tree the set links through its nodeset, that nodeset's
// and the tree's entries unchanged since the seal (unchanged): made once
// for the files of nd.
func (a *appliedSet) nodeDir(nd string) *keptNodeDir {
	v, loaded := a.nodes.Load(nd)
	if !loaded {
		v, _ = a.nodes.LoadOrStore(nd, &keptNodeDir{})
	}
	k := v.(*keptNodeDir)
	k.once.Do(func() {
		k.dir, k.inNodeset, k.err = a.resolved(nd)
		k.unchanged = k.err == nil && k.inNodeset && a.unchanged(path.Dir(nd)) && a.unchanged(nd)
		k.lo, _ = slices.BinarySearch(a.names, nd+"/")
		k.hi, _ = slices.BinarySearch(a.names, nd+"0") // '0' follows '/'
	})
	return k
}

// keptDir is node directory nd of the applied set when it is at dir and keep
// looked at its files (nil otherwise): what keptAs reads. Nothing is looked at
// on disk.
func (a *appliedSet) keptDir(nd, dir string) *keptNodeDir {
	if a == nil {
		return nil
	}
	if _, ok := a.nodes.Load(nd); !ok {
		return nil // no file of it was looked at: none was kept
	}
	k := a.nodeDir(nd)
	if k.err != nil || k.dir != dir {
		return nil
	}
	return k
}

// keptAs reports whether keep kept file of node directory nd (k, from
// keptDir; nil: no) with content sum, in k's directory.
func (a *appliedSet) keptAs(k *keptNodeDir, nd, file, sum string) bool {
	if k == nil {
		return false
	}
	names := a.names[k.lo:k.hi]
	j, found := slices.BinarySearchFunc(names, file, func(name, file string) int { return strings.Compare(name[len(nd)+1:], file) })
	if !found {
		return false
	}
	st := &a.stats[k.lo+j]
	return st.kept.Load() && st.sum == sum
}

func (a *appliedSet) statFile(w *Workdir, name, sum string) (p string, ok, inTree bool) {
	if !isLowerHex(sum, 64) {
		return "", false, false
	}
	parent, base := path.Split(name)
	parent = strings.TrimSuffix(parent, "/")
	var dir string
	var keptTree bool
	if isNodeDir(parent) {
		k := a.nodeDir(parent)
		if k.err != nil {
			return "", false, false
		}
		dir, keptTree = k.dir, k.unchanged
	} else {
		var err error
		if dir, _, err = a.resolved(parent); err != nil {
			return "", false, false
		}
	}
	p = dir + string(filepath.Separator) + base
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || !fi.ModTime().Before(a.seal) {
		return "", false, false
	}
	if keptTree {
		return p, true, true
	}
	oi, err := os.Lstat(w.objectPath(sum))
	if err != nil || !oi.Mode().IsRegular() || !os.SameFile(fi, oi) {
		return "", false, false
	}
	return p, true, false
}

// prefetch checks the applied set's files by their stat (appliedSet.stat) on
// another goroutine, from the last name back, while the publish's keep asks
// from the first: a publish that keeps most of a fleet's files spends its
// time in those system calls, which its caller makes one after the other. It
// returns what stops it and waits for it to end. Nothing but the stats is
// done ahead: what keep concludes from them is done by keep.
func (o *objectWriter) prefetch() (stop func()) {
	a := o.applied
	if a == nil || o.w.noLinks.Load() {
		return func() {}
	}
	names := a.names
	var stopped atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := len(names) - 1; i >= 0 && !stopped.Load(); i-- {
			a.statAt(o.w, i)
		}
	}()
	return func() {
		stopped.Store(true)
		<-done
	}
}

// dir is the path on disk of directory name of the applied set: a node
// directory's tree, or a cluster's nodeset (their links read once, by
// linkTarget), or the directory in the set. It is only where keep looks for
// the file: what makes the file the one to keep is that it is its object's
// inode, wherever it is found.
func (a *appliedSet) dir(name string) (string, error) {
	p, _, err := a.resolved(name)
	return p, err
}

// resolved is dir, and whether the directory is in a nodeset (or is one).
func (a *appliedSet) resolved(name string) (string, bool, error) {
	var parent string
	var inNodeset bool
	switch {
	case isNodesDir(name):
		parent = filepath.Join(a.set, filepath.FromSlash(path.Dir(name)))
	case isNodeDir(name):
		var err error
		if parent, inNodeset, err = a.resolved(path.Dir(name)); err != nil {
			return "", false, err
		}
	default:
		return filepath.Join(a.set, filepath.FromSlash(name)), false, nil
	}
	type resolvedDir struct {
		p         string
		inNodeset bool
		err       error
	}
	if v, ok := a.dirs.Load(name); ok {
		r := v.(resolvedDir)
		return r.p, r.inNodeset, r.err
	}
	p := filepath.Join(parent, path.Base(name))
	if isNodeDir(name) && inNodeset {
		if id, ok := a.recordedTree(name, parent); ok {
			p = filepath.Join(a.w.trees(), id)
			a.dirs.Store(name, resolvedDir{p, true, nil})
			return p, true, nil
		}
		readHook("link " + p)
	}
	d, nodeset, err := a.w.linkTarget(name, p, inNodeset)
	switch {
	case err == nil:
		p, inNodeset = d, inNodeset || nodeset
	case errors.Is(err, syscall.EINVAL):
		err = nil // a real directory
	}
	a.dirs.Store(name, resolvedDir{p, inNodeset, err})
	return p, inNodeset, err
}
