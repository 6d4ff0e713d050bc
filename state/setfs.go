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
// regular files and directories, and its node directories that are symlinks
// to the work directory's trees (<cluster>/nodes/<node> →
// ../../../../trees/<id>), which read as directories. No other symlink is
// followed: one elsewhere in the set, or pointing anywhere else, is an error.
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
var errForeignSymlink = errors.New("a symlink that is not a node directory linked to the work directory's trees")

// resolve returns the path on disk of name in the set, every symlink on the way
// checked: only a node directory's link to a tree (itself a real directory)
// is followed. The last part is left to the caller to open without following.
func (s *setFS) resolve(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return s.dir, nil
	}
	parts := strings.Split(name, "/")
	cur := s.dir
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", &fs.PathError{Op: op, Path: name, Err: unwrapPathError(err)}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			tree, err := s.treeOf(parts[:i+1], next)
			if err != nil {
				return "", &fs.PathError{Op: op, Path: name, Err: err}
			}
			next = tree
		}
		cur = next
	}
	return cur, nil
}

// treeOf returns the tree the symlink p (the set's path parts) links to, when
// it is a node directory's link to a tree that is a real directory.
func (s *setFS) treeOf(parts []string, p string) (string, error) {
	if !isNodeDir(strings.Join(parts, "/")) {
		return "", errForeignSymlink
	}
	target, err := os.Readlink(p)
	if err != nil {
		return "", err
	}
	id, ok := treeOfLink(target)
	if !ok {
		return "", errForeignSymlink
	}
	tree := filepath.Join(s.w.trees(), id)
	fi, err := os.Lstat(tree)
	if err != nil {
		return "", unwrapPathError(err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("the node directory's tree %s is not a directory", tree)
	}
	return tree, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (s *setFS) Open(name string) (fs.File, error) {
	p, err := s.resolve("open", name)
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
	p, err := s.resolve("read", name)
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
	p, err := s.resolve("stat", name)
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

// ReadDir lists directory name of the set; a node directory linked to a tree
// is listed as the directory it reads as. Other symlinks are listed as they
// are (symlinks), and refused when opened.
func (s *setFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := s.resolve("readdir", name)
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
		tree, err := s.treeOf(strings.Split(child, "/"), filepath.Join(p, e.Name()))
		if err != nil {
			continue
		}
		fi, err := os.Lstat(tree)
		if err != nil {
			continue
		}
		entries[i] = fs.FileInfoToDirEntry(renamedInfo{fi, e.Name()})
	}
	return entries, nil
}

// renamedInfo is a tree's FileInfo under the node directory's name.
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
