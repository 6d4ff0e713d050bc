package state

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SetFS is the applied set of serial n as a file system, for reading: its
// regular files and directories, and the links fuelsync makes to the work
// directory's shared directories, which read as directories: a cluster's
// nodes directory linked to a nodeset (<cluster>/nodes →
// ../../../nodesets/<id>), whose node directories are links to trees
// (<node> → ../../trees/<id>), and, where a cluster has a nodes directory of
// its own, its node directories linked to trees (<cluster>/nodes/<node> →
// ../../../../trees/<id>). No other symlink is followed: one elsewhere in the
// set, or pointing anywhere else, is an error.
func (w *Workdir) SetFS(n int64) fs.FS { return &setFS{w: w, dir: w.SetDir(n)} }

type setFS struct {
	w   *Workdir
	dir string
}

var (
	_ fs.ReadDirFS  = (*setFS)(nil)
	_ fs.ReadFileFS = (*setFS)(nil)
	_ fs.StatFS     = (*setFS)(nil)
)

// errForeignSymlink is the error for a symlink in a set that fuelsync did not
// make: never followed.
var errForeignSymlink = errors.New("a symlink that is not one fuelsync makes (a cluster's nodes directory linked to a nodeset, or a node directory linked to a tree, in the work directory)")

// resolve returns the path on disk of name in the set, every symlink on the
// way checked: only the links linkedDir accepts are followed. The last part is
// left to the caller to open without following. inNodeset says the path is
// in a nodeset (or is one).
func (s *setFS) resolve(op, name string) (p string, inNodeset bool, err error) {
	if !fs.ValidPath(name) {
		return "", false, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return s.dir, false, nil
	}
	parts := strings.Split(name, "/")
	cur := s.dir
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", false, &fs.PathError{Op: op, Path: name, Err: unwrapPathError(err)}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			dir, nodeset, err := s.w.linkedDir(strings.Join(parts[:i+1], "/"), next, inNodeset)
			if err != nil {
				return "", false, &fs.PathError{Op: op, Path: name, Err: err}
			}
			next, inNodeset = dir, inNodeset || nodeset
		}
		cur = next
	}
	return cur, inNodeset, nil
}

// linkedDir returns the directory the symlink p, name (slashed) in a set,
// leads to, when it is a link fuelsync makes there: a cluster's nodes
// directory linked to a nodeset (nodeset true), or a node directory linked
// to a tree, from a nodeset (inNodeset: its nodes directory was one) or from
// the cluster's own nodes directory, each in exactly the form fuelsync
// writes. What it leads to must be a real directory.
func (w *Workdir) linkedDir(name, p string, inNodeset bool) (dir string, nodeset bool, err error) {
	dir, nodeset, err = w.linkTarget(name, p, inNodeset)
	if err != nil {
		return "", false, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", false, unwrapPathError(err)
	}
	if !fi.IsDir() {
		return "", false, fmt.Errorf("%s, which %s links to, is not a directory", dir, name)
	}
	return dir, nodeset, nil
}

// linkTarget is linkedDir without looking at what the link leads to: the
// path of the tree or nodeset its text names (EINVAL when p is no symlink).
func (w *Workdir) linkTarget(name, p string, inNodeset bool) (dir string, nodeset bool, err error) {
	var parse func(target string) (string, bool)
	base := w.trees()
	switch {
	case isNodesDir(name) && !inNodeset:
		parse, base, nodeset = nodesetOfLink, w.nodesets(), true
	case isNodeDir(name) && inNodeset:
		parse = treeOfNodesetLink
	case isNodeDir(name):
		parse = treeOfLink
	default:
		return "", false, errForeignSymlink
	}
	target, err := os.Readlink(p)
	if err != nil {
		return "", false, unwrapPathError(err)
	}
	id, ok := parse(target)
	if !ok {
		return "", false, errForeignSymlink
	}
	return filepath.Join(base, id), nodeset, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (s *setFS) Open(name string) (fs.File, error) {
	p, _, err := s.resolve("open", name)
	if err != nil {
		return nil, err
	}
	f, err := openNoFollow(p)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapPathError(err)}
	}
	return f, nil
}

func (s *setFS) ReadFile(name string) ([]byte, error) {
	p, _, err := s.resolve("read", name)
	if err != nil {
		return nil, err
	}
	f, err := openNoFollow(p)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: unwrapPathError(err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("not a regular file")}
	}
	return io.ReadAll(f)
}

func (s *setFS) Stat(name string) (fs.FileInfo, error) {
	p, _, err := s.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: unwrapPathError(err)}
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: errForeignSymlink}
	}
	return renamedInfo{fi, pathBase(name)}, nil
}

// ReadDir lists directory name of the set; a link linkedDir accepts (a
// nodes directory linked to a nodeset, a node directory linked to a tree) is
// listed as the directory it reads as. Other symlinks are listed as they are
// (symlinks), and refused when opened.
func (s *setFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, inNodeset, err := s.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	f, err := openNoFollow(p)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPathError(err)}
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: unwrapPathError(err)}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for i, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		child := e.Name()
		if name != "." {
			child = name + "/" + child
		}
		dir, _, err := s.w.linkedDir(child, filepath.Join(p, e.Name()), inNodeset)
		if err != nil {
			continue
		}
		fi, err := os.Lstat(dir)
		if err != nil {
			continue
		}
		entries[i] = fs.FileInfoToDirEntry(renamedInfo{fi, e.Name()})
	}
	return entries, nil
}

// renamedInfo is a linked directory's FileInfo under the link's name.
type renamedInfo struct {
	fs.FileInfo
	name string
}

func (r renamedInfo) Name() string       { return r.name }
func (r renamedInfo) ModTime() time.Time { return r.FileInfo.ModTime() }

func pathBase(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}
