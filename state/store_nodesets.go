package state

// Shared nodes/ directories. A cluster's nodes/ directory holds one link per
// node directory; a set that linked each node directory on its own made one
// symlink per node of the fleet, and pruning the oldest set removed as many,
// though most clusters do not change from one apply to the next. So the
// nodes/ directory of a cluster is shared too, as a nodeset:
// <workdir>/nodesets/<id> is a real directory of symlinks, one per node
// directory, each ../../trees/<tree id> (44 bytes), and the set's
// <cluster>/nodes is a symlink to it, ../../../nodesets/<id> (50 bytes; a
// hard link to the current set's when that names the same nodeset). <id> is
// the first 32 hex digits of the sha256 of the nodeset's sorted entries (node
// name and tree id, one a line). A set thus costs an unchanged cluster one
// link, and its removal one unlink.
//
// A nodeset is reused only after a check that it is a directory (not a
// symlink) holding exactly its entries, each a symlink of exactly that text
// (a symlink cannot be changed in place: only replaced, which the check
// sees); otherwise it is built in nodesets/.tmp-<id>-<8 hex>, fsynced and
// renamed into place (exchanged with a damaged one), as a tree is, before the
// set that links it is committed. It is shared only when every node directory
// of the cluster is a tree and nothing else is in the cluster's nodes/ (a
// node directory with a subdirectory, a file beside the node directories,
// node directories that are real directories where links fail): the cluster
// then keeps a nodes/ directory of its own, with one link per node directory
// (../../../../trees/<id>, the layout before nodesets), or real directories.
// Sets written before nodesets have that layout everywhere, and are read and
// pruned as before.
//
// After the commit, pruning reads the nodes/ link of each cluster of each
// kept set, and each nodeset they name once; a nodeset no kept set names is
// removed, before the trees no kept set or nodeset links.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/fuelsync/fuelsync/render"
)

// nodesetLinkPrefix is what a set's <cluster>/nodes symlink holds before
// the nodeset's id: from <workdir>/artifacts/<serial>/<cluster>/ up to
// <workdir>.
const nodesetLinkPrefix = "../../../nodesets/"

// nodesetTreePrefix is what a nodeset's entry holds before the tree's id:
// from <workdir>/nodesets/<id>/ up to <workdir>.
const nodesetTreePrefix = "../../trees/"

// nodesets holds the shared nodes/ directories, by id.
func (w *Workdir) nodesets() string { return filepath.Join(w.Dir, "nodesets") }

// nodesetOfLink returns the nodeset id a <cluster>/nodes symlink's target
// names: ok only for exactly ../../../nodesets/<32 lowercase hex digits>.
func nodesetOfLink(target string) (string, bool) {
	id, ok := strings.CutPrefix(target, nodesetLinkPrefix)
	return id, ok && isTreeID(id)
}

// treeOfNodesetLink returns the tree id a nodeset's entry names: ok only for
// exactly ../../trees/<32 lowercase hex digits>.
func treeOfNodesetLink(target string) (string, bool) {
	id, ok := strings.CutPrefix(target, nodesetTreePrefix)
	return id, ok && isTreeID(id)
}

// isNodesDir reports whether name (slashed) is a cluster's nodes directory,
// <cluster>/nodes, of a valid cluster name (render.NodesDir).
func isNodesDir(name string) bool {
	cluster, seg, ok := strings.Cut(name, "/")
	return ok && !strings.Contains(seg, "/") && name == render.NodesDir(cluster) && isNodeDir(name+"/n")
}

// nodesetEntry is a node directory of a nodeset: the node's name and its
// tree's id.
type nodesetEntry struct{ node, tree string }

// nodesetID is the id of a nodeset's entries (sorted by node).
func nodesetID(entries []nodesetEntry) string {
	return pairsID(entries, func(e nodesetEntry) (string, string) { return e.node, e.tree })
}

// linkNodeset makes cluster's nodes directory in the set in dir a symlink to
// the nodeset of entries (checked, or built). A *linkFallback when symlinks
// do not work here: the caller makes the node directories otherwise.
func (o *objectWriter) linkNodeset(dir, cluster string, entries []nodesetEntry, mkdir func(name string) error) error {
	id := nodesetID(entries)
	if err := o.ensureNodeset(id, cluster, entries); err != nil {
		return err
	}
	if err := mkdir(cluster); err != nil {
		return err
	}
	nodes := render.NodesDir(cluster)
	p := filepath.Join(dir, filepath.FromSlash(nodes))
	err := do("symlink nodes "+cluster, func() error { return o.w.linkShared(nodes, nodesetLinkPrefix+id, p) })
	if symlinksUnsupported(err) {
		return o.noSymlinksHere(err)
	}
	return err
}

// symlinksUnsupported says err is a symlink's failure where the file system
// (or its mount) has no symlinks.
func symlinksUnsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

// noSymlinksHere records that symlinks fail in the work directory (err):
// node directories are real ones from now on, and Warn says so once.
func (o *objectWriter) noSymlinksHere(err error) error {
	o.w.noSymlinks.Store(true)
	o.w.warn(fmt.Sprintf("symlinks do not work in %s (%v): node directories are not shared between applied sets", o.w.Dir, errors.Unwrap(err)))
	return &linkFallback{err}
}

// ensureNodeset makes nodesets/<id> hold exactly entries: kept when it does,
// built in a temporary directory and renamed into place (exchanged with what
// was there) otherwise.
func (o *objectWriter) ensureNodeset(id, cluster string, entries []nodesetEntry) error {
	final := filepath.Join(o.w.nodesets(), id)
	err := error(nil)
	if !o.nodesetHolds(final, cluster, entries) {
		err = o.buildDir("nodeset", id, o.w.nodesets(), &o.nodesetsDir, func(tmp string) error {
			return o.linkNodesetEntries(id, tmp, entries)
		})
	}
	if err == nil {
		trees := make([]string, len(entries))
		for i, e := range entries {
			trees[i] = e.tree
		}
		o.nodesets.Store(id, trees)
	}
	return err
}

// checkedNodesets are the nodesets o found to hold their entries or built,
// by id, with the trees each links; nil for o nil.
func (o *objectWriter) checkedNodesets() map[string][]string {
	if o == nil {
		return nil
	}
	out := map[string][]string{}
	o.nodesets.Range(func(id, trees any) bool {
		out[id.(string)] = trees.([]string)
		return true
	})
	return out
}

// linkNodesetEntries writes each entry's link to its tree into tmp, the
// nodeset id being built.
func (o *objectWriter) linkNodesetEntries(id, tmp string, entries []nodesetEntry) error {
	for _, e := range entries {
		err := do("symlink nodeset "+id+"/"+e.node, func() error { return os.Symlink(nodesetTreePrefix+e.tree, filepath.Join(tmp, e.node)) })
		if symlinksUnsupported(err) {
			return o.noSymlinksHere(err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// buildDir makes parent/id, a tree or a nodeset (kind), hold what fill writes
// into an empty directory: built in a temporary directory beside it, sealed,
// synced and renamed into place (placeDir). parent is made when missing, once
// a publish (made).
func (o *objectWriter) buildDir(kind, id, parent string, made *onceMap, fill func(tmp string) error) error {
	err := made.do("", func() error {
		if _, err := os.Stat(parent); err == nil {
			return nil
		}
		if err := do("mkdir "+kind+"s", func() error { return os.MkdirAll(parent, 0o755) }); err != nil {
			return err
		}
		o.mu.Lock()
		o.dirs[o.w.Dir] = true
		o.mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	tmp := filepath.Join(parent, ".tmp-"+id+"-"+NewLineage()[:8])
	if err := do("mkdir "+kind+" "+id, func() error { return os.Mkdir(tmp, 0o755) }); err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := o.sealObject(tmp); err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if err := placeDir(kind, id, tmp, filepath.Join(parent, id)); err != nil {
		return err
	}
	ok = true
	o.mu.Lock()
	o.dirs[parent] = true
	o.mu.Unlock()
	return nil
}

// placeDir renames the directory tmp, built whole and synced, to final (a
// tree or a nodeset of id: kind says which, for the steps' names). Something
// already there (a damaged one) is exchanged with it atomically, so that the
// sets linking final never see it missing, and then removed.
func placeDir(kind, id, tmp, final string) error {
	if _, err := os.Lstat(final); err != nil {
		return do("rename "+kind+" "+id, func() error { return os.Rename(tmp, final) })
	}
	err := do("exchange "+kind+" "+id, func() error { return exchange(tmp, final) })
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.ENOTSUP) {
		// No exchange on this file system: remove, then rename.
		err = do("remove "+kind+" "+id, func() error { return os.RemoveAll(final) })
		if err == nil {
			err = do("rename "+kind+" "+id, func() error { return os.Rename(tmp, final) })
		}
		return err
	}
	if err != nil {
		return err
	}
	_ = do("remove "+kind+" "+filepath.Base(tmp), func() error { return os.RemoveAll(tmp) })
	return nil
}

// nodesetHolds reports whether dir, cluster's nodeset, is a directory (not a
// symlink) holding exactly entries, each a symlink to its tree in exactly
// the form a nodeset's entry has. It is not read when the applied set's
// cluster links it and its entries have not changed since the applied set's
// seal: its mtime is before the seal (a symlink cannot be changed, only
// replaced, which sets its directory's mtime to the time of the change); the
// publish that made the applied set found it whole after its seal (read,
// kept so, or built and given an mtime before its seal, as an object is).
func (o *objectWriter) nodesetHolds(dir, cluster string, entries []nodesetEntry) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	if a := o.applied; a != nil && fi.ModTime().Before(a.seal) {
		if p, inNodeset, err := a.resolved(render.NodesDir(cluster)); err == nil && inNodeset && p == dir {
			return true
		}
	}
	readHook("dir " + dir)
	got, err := os.ReadDir(dir)
	if err != nil || len(got) != len(entries) {
		return false
	}
	for i, e := range entries {
		if got[i].Name() != e.node || got[i].Type()&fs.ModeSymlink == 0 {
			return false
		}
		target, err := os.Readlink(filepath.Join(dir, e.node))
		if err != nil || target != nodesetTreePrefix+e.tree {
			return false
		}
	}
	return true
}

// linkShared makes p, the directory name (slashed) of a new set, a symlink
// to target (a tree or a nodeset). A new symlink is a new inode, which costs
// a file system far more than a new name of an existing one (on ext4, about
// 40 times the CPU time of a hard link), and most such directories link the
// same target in one set as in the one before: when the current set's name
// is a symlink to target, p is made a hard link to that symlink (Linux links
// the symlink itself, not what it points to), and read back. Anything else
// makes a new symlink.
func (w *Workdir) linkShared(name, target, p string) error {
	prev := filepath.Join(w.CurrentDir(), filepath.FromSlash(name))
	if got, err := os.Readlink(prev); err == nil && got == target {
		if os.Link(prev, p) == nil {
			if got, err := os.Readlink(p); err == nil && got == target {
				return nil
			}
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return os.Symlink(target, p)
}

// setRefs are what the applied sets on disk link: the nodesets, and the
// trees (from the sets' own nodes/ directories and from those nodesets).
type setRefs struct {
	nodesets, trees map[string]bool
	// ok is false when a set, or a nodeset one names, could not be read
	// whole: nothing is pruned then.
	ok bool
}

// refs reads the links of every applied set on disk, and of each nodeset
// they name, once; but not those of checked, the nodesets the publish just
// made found to hold their entries or built (by id, the trees each links:
// objectWriter.checkedNodesets), which it takes as they are. Under the lock,
// between that publish's check and this read, nothing of fuelsync's changes
// a nodeset; a fleet's publish keeps every nodeset but those of the clusters
// that changed, whose links (a link a node) this read one after another.
func (w *Workdir) refs(checked map[string][]string) setRefs {
	r := setRefs{nodesets: map[string]bool{}, trees: map[string]bool{}}
	for _, n := range w.sets() {
		if !w.setLinks(w.SetDir(n), &r) {
			return setRefs{}
		}
	}
	for id := range r.nodesets {
		if trees, ok := checked[id]; ok {
			for _, t := range trees {
				r.trees[t] = true
			}
			continue
		}
		if !readTreeLinks(filepath.Join(w.nodesets(), id), treeOfNodesetLink, r.trees) {
			return setRefs{}
		}
	}
	r.ok = true
	return r
}

// setLinks adds the nodesets and trees the set in dir links to r; false when
// it cannot be read whole.
func (w *Workdir) setLinks(set string, r *setRefs) bool {
	clusters, err := os.ReadDir(set)
	if err != nil {
		return false
	}
	for _, c := range clusters {
		if !c.IsDir() {
			continue
		}
		nodes := filepath.Join(set, filepath.FromSlash(render.NodesDir(c.Name())))
		fi, err := os.Lstat(nodes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return false
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(nodes)
			if err != nil {
				return false
			}
			if id, ok := nodesetOfLink(target); ok {
				r.nodesets[id] = true
			}
		case fi.IsDir():
			if !readTreeLinks(nodes, treeOfLink, r.trees) {
				return false
			}
		}
	}
	return true
}

// readTreeLinks adds the trees the symlinks in dir name (as parse reads
// their targets) to trees; false when dir cannot be read.
func readTreeLinks(dir string, parse func(target string) (string, bool), trees map[string]bool) bool {
	pruneReadHook(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			return false
		}
		if id, ok := parse(target); ok {
			trees[id] = true
		}
	}
	return true
}

// pruneShared removes the nodesets and then the trees no applied set links
// (r), and the temporary ones of crashed runs (<dir>/<32 hex> and
// <dir>/.tmp-<32 hex>-<8 hex>, no other name). Called after the commit,
// before pruneObjects (a removed tree's files are links to objects).
func (w *Workdir) pruneShared(r setRefs) {
	if !w.claimed.Load() {
		return
	}
	for _, d := range []struct {
		kind, dir string
		refs      map[string]bool
	}{{"nodeset", w.nodesets(), r.nodesets}, {"tree", w.trees(), r.trees}} {
		entries, err := os.ReadDir(d.dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			switch {
			case isTempName(name, ".tmp-", treeIDLen, true):
			case r.ok && isTreeID(name) && !d.refs[name]:
			default:
				continue
			}
			_ = do("remove "+d.kind+" "+name, func() error { return os.RemoveAll(filepath.Join(d.dir, name)) })
		}
	}
}

// clusterNodeDirs groups node directories (sorted) by their cluster, in
// order.
func clusterNodeDirs(nds []string) (clusters []string, byCluster map[string][]int) {
	byCluster = map[string][]int{}
	for i, nd := range nds {
		c, _, _ := render.ParseNodeDir(nd)
		if byCluster[c] == nil {
			clusters = append(clusters, c)
		}
		byCluster[c] = append(byCluster[c], i)
	}
	slices.Sort(clusters)
	return clusters, byCluster
}

// nodeOf is the node of a node directory's name.
func nodeOf(nd string) string { return path.Base(nd) }
