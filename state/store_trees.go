package state

// Shared node directories. A directory cannot be hard-linked, so the node
// directories of the sets (<cluster>/nodes/<node>/, a node's graph files) are
// shared as trees: <workdir>/trees/<id> is a real directory whose files are hard
// links to their objects, and a node directory is a symlink to it: in its
// cluster's nodeset, ../../trees/<id> (store_nodesets.go), or, in a cluster
// with a nodes/ directory of its own, ../../../../trees/<id> (50 bytes: short
// enough for ext4 to keep it in the inode, so a shared node directory costs
// no block; where the current set links the same tree, the new set's symlink
// is a hard link to the current set's, so it costs no new inode either). <id>
// is the first 32 hex digits (128 bits) of the sha256 of the directory's
// sorted entries (name and sha256 of content, one a line). A tree is only
// reused after a check that it holds exactly those entries (each the same
// inode as its object, or the same bytes), so even a collision could not put
// wrong content in a set: it would read as a damaged tree and be built again.
// The check does not read a tree the applied set links whose files keep found
// unchanged and whose entries did not change since the applied set's seal
// (keptTree).
//
// A tree is built like an object: in a temporary directory under trees/,
// given an mtime before the publish's seal, fsynced, renamed into place (or
// exchanged with a damaged one, atomically), trees/ fsynced, all before the
// set that links it is committed. After the commit, pruning removes the
// nodesets and trees no kept set links (it reads their symlinks), and only
// then the objects no set or tree links.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/fuelsync/fuelsync/render"
)

// treeIDLen is the length of a tree's name: 32 hex digits, 128 bits of sha256.
const treeIDLen = 32

// treeLinkPrefix is what a node directory's symlink holds before the tree's
// id: from <workdir>/artifacts/<serial>/<cluster>/nodes/ up to <workdir>.
const treeLinkPrefix = "../../../../trees/"

// trees holds the shared node directories, by id.
func (w *Workdir) trees() string { return filepath.Join(w.Dir, "trees") }

// treeOfLink returns the tree id a node directory's symlink target names: ok
// only for exactly ../../../../trees/<32 lowercase hex digits>.
func treeOfLink(target string) (string, bool) {
	id, ok := strings.CutPrefix(target, treeLinkPrefix)
	if !ok || !isTreeID(id) {
		return "", false
	}
	return id, true
}

func isTreeID(id string) bool { return isLowerHex(id, treeIDLen) }

// isLowerHex reports whether s is n lowercase hexadecimal digits (a digest
// that may become a path).
func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// nodeDirOf splits an artifact name <cluster>/nodes/<node>/<file> into its
// node directory (render.ParseNodeDir) and file name; ok is false for any
// other name.
func nodeDirOf(name string) (dir, file string, ok bool) {
	dir, file = path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if !isNodeDir(dir) || file == "" {
		return "", "", false
	}
	return dir, file, true
}

// treeEntry is a file of a node directory: its name and the sha256 of its
// content (its object).
type treeEntry struct{ name, sum string }

// treeID is the id of a directory of entries (sorted by name).
func treeID(entries []treeEntry) string {
	return pairsID(entries, func(e treeEntry) (string, string) { return e.name, e.sum })
}

// pairsID is the id of a tree or a nodeset: the first treeIDLen hex digits of
// the sha256 of its entries' pairs, a line each.
func pairsID[E any](entries []E, pair func(E) (string, string)) string {
	var lines []byte
	for _, e := range entries {
		a, b := pair(e)
		lines = append(append(append(append(lines, a...), ' '), b...), '\n')
	}
	sum := sha256.Sum256(lines)
	return hex.EncodeToString(sum[:treeIDLen/2])
}

// nodeDirs collects the files of a set's node directories as they are put
// (from several goroutines): they are linked as trees once the set is whole.
type nodeDirs struct {
	mu    sync.Mutex
	files map[string][]treeEntry // node directory → its files
	// deep are node directories with a subdirectory: kept as real directories.
	deep map[string]bool
}

func (n *nodeDirs) add(dir, file, sum string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.files == nil {
		n.files = map[string][]treeEntry{}
	}
	n.files[dir] = append(n.files[dir], treeEntry{file, sum})
}

func (n *nodeDirs) markDeep(dir string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.deep == nil {
		n.deep = map[string]bool{}
	}
	n.deep[dir] = true
}

// linkNodeDirs makes each node directory of the set in dir: a symlink to its
// tree (checked, or built), or, where symlinks or hard links fail or the
// directory has a subdirectory, a real directory of links to the objects (or
// copies). A cluster whose node directories are all trees, with nothing else
// in its nodes/, links that directory whole to its nodeset
// (store_nodesets.go); any other cluster has a nodes/ of its own. mkdir makes
// a directory of the set (and records it to sync).
func (o *objectWriter) linkNodeDirs(dir string, n *nodeDirs, mkdir func(name string) error) error {
	nds := slices.Sorted(maps.Keys(n.files))
	trees, err := o.nodeTrees(nds, n)
	if err != nil {
		return err
	}
	clusters, byCluster := clusterNodeDirs(nds)
	own := make([][]int, len(clusters)) // per cluster, its node directories not in a nodeset
	err = inParallel(len(clusters), func(j int) error {
		c := clusters[j]
		var entries []nodesetEntry
		for _, i := range byCluster[c] {
			if trees[i] == "" {
				own[j] = byCluster[c]
				return nil
			}
			entries = append(entries, nodesetEntry{nodeOf(nds[i]), trees[i]})
		}
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(render.NodesDir(c)))); !errors.Is(err, fs.ErrNotExist) || o.w.noSymlinks.Load() {
			own[j] = byCluster[c] // something else made its nodes/ (or cannot be looked at)
			return nil
		}
		err := o.linkNodeset(dir, c, entries, mkdir)
		var fallback *linkFallback
		if errors.As(err, &fallback) {
			own[j] = byCluster[c]
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	rest := slices.Concat(own...)
	return inParallel(len(rest), func(k int) error {
		i := rest[k]
		return o.linkNodeDir(dir, nds[i], trees[i], n.files[nds[i]], mkdir)
	})
}

// nodeTrees checks or builds the tree of each node directory nds[i] (once
// per tree) and returns its id, "" for one made a real directory (with a
// subdirectory, or where links fail).
func (o *objectWriter) nodeTrees(nds []string, n *nodeDirs) ([]string, error) {
	trees := make([]string, len(nds))
	var once onceMap // tree id → checked or built once
	err := inParallel(len(nds), func(i int) error {
		nd := nds[i]
		entries := n.files[nd]
		slices.SortFunc(entries, func(a, b treeEntry) int { return strings.Compare(a.name, b.name) })
		if n.deep[nd] || o.w.noLinks.Load() || o.w.noSymlinks.Load() {
			return nil
		}
		id := treeID(entries)
		err := once.do(id, func() error { return o.ensureTree(id, nd, entries) })
		var fallback *linkFallback
		if errors.As(err, &fallback) {
			return nil
		}
		if err == nil {
			trees[i] = id
		}
		return err
	})
	if err == nil && once.len() > 0 {
		o.mu.Lock()
		o.dirs[o.w.trees()] = true
		o.mu.Unlock()
	}
	return trees, err
}

// linkNodeDir makes node directory nd of the set in dir a symlink to its
// tree id in its cluster's own nodes/ directory, or a real directory (id "",
// or where symlinks fail).
func (o *objectWriter) linkNodeDir(dir, nd, id string, entries []treeEntry, mkdir func(name string) error) error {
	if id == "" || o.w.noSymlinks.Load() {
		return o.realNodeDir(dir, nd, entries, mkdir)
	}
	if err := mkdir(path.Dir(nd)); err != nil {
		return err
	}
	p := filepath.Join(dir, filepath.FromSlash(nd))
	err := do("symlink tree "+nd, func() error { return o.w.linkShared(nd, treeLinkPrefix+id, p) })
	if symlinksUnsupported(err) {
		_ = o.noSymlinksHere(err)
		return o.realNodeDir(dir, nd, entries, mkdir)
	}
	return err
}

// realNodeDir makes node directory nd of the set in dir a directory of its own,
// each file a link to its object (or a copy of it).
func (o *objectWriter) realNodeDir(dir, nd string, entries []treeEntry, mkdir func(name string) error) error {
	if err := mkdir(nd); err != nil {
		return err
	}
	for _, e := range entries {
		name := nd + "/" + e.name
		if err := o.checkKeptObject(e.sum); err != nil {
			return err
		}
		if err := o.linkObject(e.sum, filepath.Join(dir, filepath.FromSlash(name)), name); err != nil {
			return err
		}
	}
	return nil
}

// linkFallback says a tree could not be built with hard links: the node
// directory is made a real one instead.
type linkFallback struct{ err error }

func (e *linkFallback) Error() string { return e.err.Error() }

// ensureTree makes trees/<id> hold exactly entries (the files of node
// directory nd, or of another with the same files): kept when it does, built
// in a temporary directory and renamed into place (exchanged with what was
// there) otherwise.
func (o *objectWriter) ensureTree(id, nd string, entries []treeEntry) error {
	final := filepath.Join(o.w.trees(), id)
	if o.treeHolds(final, nd, entries) {
		return nil
	}
	return o.buildDir("tree", id, o.w.trees(), &o.treesDir, func(tmp string) error {
		return o.linkTreeEntries(id, tmp, entries)
	})
}

// linkTreeEntries links (or copies, where an object has too many links) each
// entry's object into tmp, the tree id being built.
func (o *objectWriter) linkTreeEntries(id, tmp string, entries []treeEntry) error {
	for _, e := range entries {
		if err := o.checkKeptObject(e.sum); err != nil {
			return err
		}
		obj := o.w.objectPath(e.sum)
		p := filepath.Join(tmp, e.name)
		err := do("link tree "+id+"/"+e.name, func() error { return os.Link(obj, p) })
		switch {
		case err == nil:
		case errors.Is(err, syscall.EMLINK):
			if err := copyObject(obj, e.sum, p); err != nil {
				return err
			}
		case errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP):
			return &linkFallback{err}
		default:
			return err
		}
	}
	return nil
}

// treeHolds reports whether dir is a directory (not a symlink) holding exactly
// entries, each a regular file that is its object's inode or holds the same
// bytes. nd is the node directory whose files entries are: those keep kept
// in dir, as the applied set's nd, are not looked at again.
func (o *objectWriter) treeHolds(dir, nd string, entries []treeEntry) bool {
	fi, err := o.lstatTree(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	if o.keptTree(dir, nd, fi, entries) {
		return true
	}
	readHook("dir " + dir)
	got, err := os.ReadDir(dir)
	if err != nil || len(got) != len(entries) {
		return false
	}
	kept := o.applied.keptDir(nd, dir)
	for i, e := range entries {
		if got[i].Name() != e.name || !got[i].Type().IsRegular() {
			return false
		}
		if o.applied.keptAs(kept, nd, e.name, e.sum) {
			continue // the object of e.sum, found so by keep in this publish
		}
		p := filepath.Join(dir, e.name)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
		oi, err := os.Stat(o.w.objectPath(e.sum))
		if err == nil && os.SameFile(fi, oi) {
			continue // the object, checked against its content in this publish
		}
		readHook(p)
		data, err := os.ReadFile(p)
		if err != nil || digest(data) != e.sum {
			return false
		}
	}
	return true
}

// lstatTree is the lstat of the tree dir: the one keep made, when it kept
// a file of that tree of the applied set, else made now.
func (o *objectWriter) lstatTree(dir string) (fs.FileInfo, error) {
	if a := o.applied; a != nil {
		if _, ok := a.trees.Load(dir); ok {
			return a.treeStat(dir)
		}
	}
	return os.Lstat(dir)
}

// keptTree reports whether the tree dir (fi) holds exactly entries without
// reading it: keep found each of entries in dir, through the applied set's
// link to it from nd, to be its object unchanged since the applied set's seal, and
// dir's entries have not changed since then either: its mtime is before the
// seal (adding, removing or renaming an entry sets it to the time of the
// change). The publish that made the applied set found dir to hold exactly
// entries after its seal (it read it, or kept it so itself, or built it
// and gave it an mtime before its seal, as it does an object), so it still
// does. What this cannot catch is a directory's mtime set back by hand
// (touch -d), as for a file.
func (o *objectWriter) keptTree(dir, nd string, fi fs.FileInfo, entries []treeEntry) bool {
	a := o.applied
	if a == nil || !fi.ModTime().Before(a.seal) {
		return false
	}
	k := a.keptDir(nd, dir)
	for _, e := range entries {
		if !a.keptAs(k, nd, e.name, e.sum) {
			return false
		}
	}
	return true
}

// copyObject writes p as a copy of object obj, checked against sum.
func copyObject(obj, sum, p string) error {
	readHook(obj)
	data, err := os.ReadFile(obj)
	if err != nil {
		return err
	}
	if digest(data) != sum {
		return fmt.Errorf("the object %s does not hold its content", obj)
	}
	return writeSynced(p, data)
}

// inParallel runs f(0..n-1) on a few goroutines; the first error is returned.
func inParallel(n int, f func(i int) error) error {
	workers := min(4, n)
	next := make(chan int)
	errs := make(chan error, workers)
	for range workers {
		go func() {
			var first error
			for i := range next {
				if first == nil {
					first = f(i)
				}
			}
			errs <- first
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	var err error
	for range workers {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	return err
}

// isNodeDir reports whether dir (a slash-separated path of a set) is a node's
// directory, <cluster>/nodes/<node> (render.ParseNodeDir).
func isNodeDir(dir string) bool {
	_, _, ok := render.ParseNodeDir(dir)
	return ok
}
