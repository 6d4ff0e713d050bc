package loader

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrEscapesRepo is returned (wrapped in an *fs.PathError) when a path of a
// revision file system leads through a symbolic link whose target is absolute
// or resolves outside the root of the tree. Such links are never followed;
// Lstat and ReadLink still describe them.
var ErrEscapesRepo = errors.New("path escapes the repository")

// BlobHasher is implemented by the file systems returned by OpenRevision and
// RevisionFS. BlobHash returns the hex object id of the blob holding the
// content of the named regular file (symbolic links inside the tree are
// followed, as Open does) and true, or "" and false when name is not a
// readable regular file. Two files with the same blob id have the same
// content, so a blob shared by two revisions needs to be processed once.
type BlobHasher interface {
	BlobHash(name string) (string, bool)
}

const (
	// maxSymlinkHops bounds the number of symbolic links followed while
	// resolving one name, like the kernel's ELOOP limit.
	maxSymlinkHops = 40
	// maxSymlinkTarget bounds the size of a symlink blob we are willing to
	// read as a link target.
	maxSymlinkTarget = 4096
)

var (
	errTooManyLinks = errors.New("too many levels of symbolic links")
	errIsDir        = errors.New("is a directory")
	errLinkTooLong  = errors.New("symbolic link target too long")

	errUnsupportedRevision = errors.New("reflog (@{...}) and path (:) revision syntax is not supported")
)

// storeMu serialises every access to go-git object storage made by this file.
// go-git's filesystem storage is not safe for concurrent use (it lazily fills
// an unguarded pack index map, among others), and several file systems
// returned by RevisionFS may share one *git.Repository, so the lock is
// package-wide rather than per file system. It is held only while objects are
// looked up and decoded, never while a caller reads an opened file.
var storeMu sync.Mutex

// OpenRevision opens the git repository at repoPath (a working-tree checkout
// with a .git directory, or a bare repository) and returns a read-only file
// system of the tree of revision rev, read straight from the object store
// without a checkout, together with the full hex hash of the commit rev
// resolved to. rev may be anything go-git's ResolveRevision understands:
// a branch, a tag (lightweight or annotated), HEAD, HEAD~2, main^, or a full
// or abbreviated commit hash.
//
// The file system implements fs.ReadFileFS, fs.ReadDirFS, fs.StatFS,
// fs.ReadLinkFS and BlobHasher, and is safe for concurrent use.
func OpenRevision(repoPath, rev string) (fs.FS, string, error) {
	fsys, commit, _, err := OpenRevisionDir(repoPath, rev, "")
	return fsys, commit, err
}

// OpenRevisionDir is OpenRevision of the folder dir of the revision's tree (a
// slash path from the top, such as "config/prod"; "" or "." is the whole
// tree), as Argo CD's path and Flux's spec.path read one: the file system's
// root is that folder, and a symbolic link that leads out of it is refused as
// one that leads out of the tree is (ErrEscapesRepo). It returns the commit's
// hash and the hash of the folder's tree besides: two revisions whose folders
// have the same tree hash hold the same files there. A folder that is not in
// the revision is an error that wraps fs.ErrNotExist.
func OpenRevisionDir(repoPath, rev, dir string) (fsys fs.FS, commit, tree string, err error) {
	repo, err := git.PlainOpenWithOptions(repoPath, &git.PlainOpenOptions{DetectDotGit: false, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, "", "", fmt.Errorf("opening git repository %s: %w", repoPath, err)
	}
	// go-git's parser accepts reflog selectors (main@{1}) and paths
	// (HEAD:file) but silently ignores them, resolving to another commit
	// than git would; neither can appear in a ref name, so refuse them.
	if strings.Contains(rev, "@{") || strings.Contains(rev, ":") {
		return nil, "", "", fmt.Errorf("resolving revision %q in %s: %w", rev, repoPath, errUnsupportedRevision)
	}
	storeMu.Lock()
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	storeMu.Unlock()
	if errors.Is(err, io.EOF) {
		// HEAD~N past the root commit, or ^2 of a commit with one parent.
		err = fmt.Errorf("%w: no such ancestor", plumbing.ErrReferenceNotFound)
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("resolving revision %q in %s: %w", rev, repoPath, err)
	}
	fsys, t, err := RevisionDirFS(repo, *h, dir)
	if err != nil {
		return nil, "", "", fmt.Errorf("revision %q in %s: %w", rev, repoPath, err)
	}
	return fsys, h.String(), t.String(), nil
}

// RevisionFS returns the read-only file system of the tree of commit in an
// already opened repository, as OpenRevision does. File systems for several
// commits of one repository may be used side by side, from several
// goroutines.
func RevisionFS(repo *git.Repository, commit plumbing.Hash) (fs.FS, error) {
	fsys, _, err := RevisionDirFS(repo, commit, "")
	return fsys, err
}

// RevisionDirFS is RevisionFS of the folder dir of the commit's tree, as
// OpenRevisionDir reads it, and the hash of that folder's tree.
func RevisionDirFS(repo *git.Repository, commit plumbing.Hash, dir string) (fs.FS, plumbing.Hash, error) {
	if repo == nil {
		return nil, plumbing.ZeroHash, errors.New("reading commit: nil repository")
	}
	storeMu.Lock()
	c, err := repo.CommitObject(commit)
	storeMu.Unlock()
	if err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	root, err := folderTree(repo, c.TreeHash, dir)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	g := &gitFS{
		repo:     repo,
		rootTree: root,
		modTime:  c.Committer.When,
		dirs:     make(map[string]*gitDirNode),
		sizes:    make(map[plumbing.Hash]int64),
		links:    make(map[plumbing.Hash]string),
	}
	if _, err := g.loadTree("", root); err != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("reading tree %s of commit %s: %w", root, commit, err)
	}
	return g, root, nil
}

// folderTree is the hash of the tree of folder dir (a slash path) under the
// tree root: each of its components a directory there (not a symbolic link,
// nor a submodule).
func folderTree(repo *git.Repository, root plumbing.Hash, dir string) (plumbing.Hash, error) {
	dir = path.Clean("/" + dir)[1:]
	if dir == "" {
		return root, nil
	}
	h, at := root, ""
	for _, comp := range strings.Split(dir, "/") {
		storeMu.Lock()
		t, err := object.GetTree(repo.Storer, h)
		var e *object.TreeEntry
		if err == nil {
			e, _ = t.FindEntry(comp)
		}
		storeMu.Unlock()
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("reading tree %s: %w", h, err)
		}
		at = path.Join(at, comp)
		switch {
		case e == nil:
			return plumbing.ZeroHash, fmt.Errorf("no folder %s in the tree: %w", at, fs.ErrNotExist)
		case e.Mode != filemode.Dir:
			return plumbing.ZeroHash, fmt.Errorf("%s is not a folder in the tree (a file, a symbolic link or a submodule): %w", at, fs.ErrNotExist)
		}
		h = e.Hash
	}
	return h, nil
}

// gitFS is the file system of one commit's tree.
type gitFS struct {
	repo     *git.Repository
	rootTree plumbing.Hash
	modTime  time.Time

	mu    sync.Mutex               // guards the caches below
	dirs  map[string]*gitDirNode   // resolved directory path ("" = root) -> entries
	sizes map[plumbing.Hash]int64  // blob sizes
	links map[plumbing.Hash]string // symlink targets
}

// gitDirNode holds the entries of one tree, sorted by name.
type gitDirNode struct {
	entries []object.TreeEntry
	index   map[string]int
}

// node is a resolved name: the tree entry it designates (after following
// symlinks as requested) and the real path of that entry in the tree.
type node struct {
	name  string // base name to report: that of the name asked for
	real  string // real path in the tree; "" for the root
	mode  filemode.FileMode
	hash  plumbing.Hash
	isDir bool
}

var (
	_ fs.FS         = (*gitFS)(nil)
	_ fs.ReadFileFS = (*gitFS)(nil)
	_ fs.ReadDirFS  = (*gitFS)(nil)
	_ fs.StatFS     = (*gitFS)(nil)
	_ fs.ReadLinkFS = (*gitFS)(nil)
	_ BlobHasher    = (*gitFS)(nil)

	_ fs.ReadDirFile = (*gitDirFile)(nil)
)

// loadTree returns the entries of the tree with hash h, whose real path is
// dir, reading it from the object store on first use.
func (g *gitFS) loadTree(dir string, h plumbing.Hash) (*gitDirNode, error) {
	g.mu.Lock()
	d, ok := g.dirs[dir]
	g.mu.Unlock()
	if ok {
		return d, nil
	}
	storeMu.Lock()
	t, err := object.GetTree(g.repo.Storer, h)
	storeMu.Unlock()
	if err != nil {
		return nil, err
	}
	entries := slices.Clone(t.Entries)
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	d = &gitDirNode{entries: entries, index: make(map[string]int, len(entries))}
	for i, e := range entries {
		d.index[e.Name] = i
	}
	g.mu.Lock()
	if prev, ok := g.dirs[dir]; ok {
		d = prev
	} else {
		g.dirs[dir] = d
	}
	g.mu.Unlock()
	return d, nil
}

// dirEntries returns the entries of the resolved directory n; submodules are
// empty directories.
func (g *gitFS) dirEntries(n *node) (*gitDirNode, error) {
	if n.mode == filemode.Submodule {
		return &gitDirNode{}, nil
	}
	return g.loadTree(n.real, n.hash)
}

// blobSize returns the size of blob h.
func (g *gitFS) blobSize(h plumbing.Hash) (int64, error) {
	g.mu.Lock()
	size, ok := g.sizes[h]
	g.mu.Unlock()
	if ok {
		return size, nil
	}
	storeMu.Lock()
	size, err := g.repo.Storer.EncodedObjectSize(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// EncodedObjectSize does not look into alternates; EncodedObject does.
		var obj plumbing.EncodedObject
		if obj, err = g.repo.Storer.EncodedObject(plumbing.BlobObject, h); err == nil {
			size = obj.Size()
		}
	}
	storeMu.Unlock()
	if err != nil {
		return 0, err
	}
	g.mu.Lock()
	g.sizes[h] = size
	g.mu.Unlock()
	return size, nil
}

// openBlob returns a reader of the content of blob h.
func (g *gitFS) openBlob(h plumbing.Hash) (io.ReadCloser, int64, error) {
	storeMu.Lock()
	defer storeMu.Unlock()
	obj, err := g.repo.Storer.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, 0, err
	}
	// For ordinary repositories go-git hands back an in-memory object, so
	// reading from r needs no further access to shared storage state.
	r, err := obj.Reader()
	if err != nil {
		return nil, 0, err
	}
	return r, obj.Size(), nil
}

// linkTarget returns the target of the symlink whose blob is h.
func (g *gitFS) linkTarget(h plumbing.Hash) (string, error) {
	g.mu.Lock()
	target, ok := g.links[h]
	g.mu.Unlock()
	if ok {
		return target, nil
	}
	r, size, err := g.openBlob(h)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if size > maxSymlinkTarget {
		return "", errLinkTooLong
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSymlinkTarget+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSymlinkTarget {
		return "", errLinkTooLong
	}
	target = string(b)
	g.mu.Lock()
	g.links[h] = target
	g.mu.Unlock()
	return target, nil
}

// resolve walks name through the tree. Symlinks met in intermediate
// components are always followed; a symlink in the final component is
// followed only if follow is set. Symlink targets are resolved physically,
// component by component, against the directory holding the link, so ".."
// goes back to the real parent directory. Errors are *fs.PathError with
// operation op.
func (g *gitFS) resolve(op, name string, follow bool) (*node, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	fail := func(err error) (*node, error) {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}

	// stack holds the directories from the root down to the current one,
	// so that ".." in a symlink target can go back up.
	stack := []node{{real: "", mode: filemode.Dir, hash: g.rootTree, isDir: true}}
	var rest []string
	if name != "." {
		rest = strings.Split(name, "/")
	}
	hops := 0
	var lastLink, lastTarget string
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		switch comp {
		case "", ".":
			continue // only possible in symlink targets
		case "..": // only possible in symlink targets
			if len(stack) == 1 {
				return fail(escapesRepo(lastLink, lastTarget))
			}
			stack = stack[:len(stack)-1]
			continue
		}
		e, full, err := g.child(&stack[len(stack)-1], comp)
		if err != nil {
			return fail(err)
		}
		switch e.Mode {
		case filemode.Symlink:
			if len(rest) == 0 && !follow {
				return &node{name: path.Base(name), real: full, mode: e.Mode, hash: e.Hash}, nil
			}
			hops++
			target, err := g.followLink(e, full, hops)
			if err != nil {
				return fail(err)
			}
			lastLink, lastTarget = full, target
			rest = append(strings.Split(target, "/"), rest...)
		case filemode.Dir, filemode.Submodule:
			stack = append(stack, node{real: full, mode: e.Mode, hash: e.Hash, isDir: true})
		default:
			if len(rest) != 0 {
				return fail(fs.ErrNotExist) // a file used as a directory
			}
			return &node{name: path.Base(name), real: full, mode: e.Mode, hash: e.Hash}, nil
		}
	}
	n := stack[len(stack)-1]
	n.name = path.Base(name) // "." for the root
	return &n, nil
}

// child looks name comp up in the resolved directory dir: its tree entry and
// its real path.
func (g *gitFS) child(dir *node, comp string) (e object.TreeEntry, full string, err error) {
	entries, err := g.dirEntries(dir)
	if err != nil {
		return e, "", err
	}
	i, ok := entries.index[comp]
	if !ok {
		return e, "", fs.ErrNotExist
	}
	full = comp
	if dir.real != "" {
		full = dir.real + "/" + comp
	}
	return entries.entries[i], full, nil
}

// followLink reads the target of symlink e (at real path full), the hops-th
// link of the walk: too many links, an empty target or an absolute one (which
// escapes the repository) are errors.
func (g *gitFS) followLink(e object.TreeEntry, full string, hops int) (string, error) {
	if hops > maxSymlinkHops {
		return "", errTooManyLinks
	}
	target, err := g.linkTarget(e.Hash)
	if err != nil {
		return "", err
	}
	if target == "" {
		return "", fs.ErrNotExist
	}
	if strings.HasPrefix(target, "/") {
		return "", escapesRepo(full, target)
	}
	return target, nil
}

// escapesRepo is the error for symlink link, whose target leads out of the
// repository.
func escapesRepo(link, target string) error {
	return fmt.Errorf("symlink %s -> %s: %w", link, target, ErrEscapesRepo)
}

// info builds the FileInfo of a resolved node.
func (g *gitFS) info(n *node) (*gitFileInfo, error) {
	fi := &gitFileInfo{name: n.name, modTime: g.modTime}
	switch {
	case n.isDir:
		fi.mode = fs.ModeDir | 0o755
		return fi, nil
	case n.mode == filemode.Symlink:
		fi.mode = fs.ModeSymlink | 0o777
	case n.mode == filemode.Executable:
		fi.mode = 0o755
	default:
		fi.mode = 0o644
	}
	size, err := g.blobSize(n.hash)
	if err != nil {
		return nil, err
	}
	fi.size = size
	return fi, nil
}

// Open opens the named file or directory, following symbolic links inside
// the tree.
func (g *gitFS) Open(name string) (fs.File, error) {
	n, err := g.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	fi, err := g.info(n)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if n.isDir {
		d, err := g.dirEntries(n)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &gitDirFile{fsys: g, path: name, info: fi, dir: d, real: n.real}, nil
	}
	r, _, err := g.openBlob(n.hash)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &gitFile{path: name, info: fi, r: r}, nil
}

// ReadFile returns the content of the named file, following symbolic links
// inside the tree.
func (g *gitFS) ReadFile(name string) ([]byte, error) {
	n, err := g.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	if n.isDir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errIsDir}
	}
	r, size, err := g.openBlob(n.hash)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer r.Close()
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
	}
}

// ReadDir returns the entries of the named directory sorted by name,
// following symbolic links inside the tree to reach it.
func (g *gitFS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := g.resolve("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if !n.isDir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	d, err := g.dirEntries(n)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return g.makeEntries(n.real, d.entries), nil
}

// makeEntries converts tree entries of directory dir into DirEntries.
func (g *gitFS) makeEntries(dir string, entries []object.TreeEntry) []fs.DirEntry {
	out := make([]fs.DirEntry, len(entries))
	for i, e := range entries {
		real := e.Name
		if dir != "" {
			real = dir + "/" + e.Name
		}
		isDir := e.Mode == filemode.Dir || e.Mode == filemode.Submodule
		out[i] = &gitDirEntry{fsys: g, n: node{name: e.Name, real: real, mode: e.Mode, hash: e.Hash, isDir: isDir}}
	}
	return out
}

// Stat returns the FileInfo of the named file, following symbolic links
// inside the tree; the name reported is the base of name.
func (g *gitFS) Stat(name string) (fs.FileInfo, error) {
	n, err := g.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	fi, err := g.info(n)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return fi, nil
}

// Lstat returns the FileInfo of the named file without following a final
// symbolic link.
func (g *gitFS) Lstat(name string) (fs.FileInfo, error) {
	n, err := g.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	fi, err := g.info(n)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return fi, nil
}

// ReadLink returns the target of the named symbolic link as stored in the
// repository, whether or not it points inside the tree.
func (g *gitFS) ReadLink(name string) (string, error) {
	n, err := g.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	if n.mode != filemode.Symlink || n.isDir {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	target, err := g.linkTarget(n.hash)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
	}
	return target, nil
}

// BlobHash implements BlobHasher.
func (g *gitFS) BlobHash(name string) (string, bool) {
	n, err := g.resolve("open", name, true)
	if err != nil || n.isDir || n.mode == filemode.Symlink {
		return "", false
	}
	return n.hash.String(), true
}

// gitFileInfo implements fs.FileInfo.
type gitFileInfo struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
}

func (fi *gitFileInfo) Name() string       { return fi.name }
func (fi *gitFileInfo) Size() int64        { return fi.size }
func (fi *gitFileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *gitFileInfo) ModTime() time.Time { return fi.modTime }
func (fi *gitFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *gitFileInfo) Sys() any           { return nil }
func (fi *gitFileInfo) String() string     { return fs.FormatFileInfo(fi) }

// gitDirEntry implements fs.DirEntry; its Info is that of Lstat.
type gitDirEntry struct {
	fsys *gitFS
	n    node
}

func (e *gitDirEntry) Name() string { return e.n.name }
func (e *gitDirEntry) IsDir() bool  { return e.n.isDir }
func (e *gitDirEntry) Type() fs.FileMode {
	switch {
	case e.n.isDir:
		return fs.ModeDir
	case e.n.mode == filemode.Symlink:
		return fs.ModeSymlink
	}
	return 0
}
func (e *gitDirEntry) Info() (fs.FileInfo, error) {
	fi, err := e.fsys.info(&e.n)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: e.n.real, Err: err}
	}
	return fi, nil
}
func (e *gitDirEntry) String() string { return fs.FormatDirEntry(e) }

// gitFile is an open regular file.
type gitFile struct {
	path   string
	info   *gitFileInfo
	mu     sync.Mutex
	r      io.ReadCloser
	closed bool
}

func (f *gitFile) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *gitFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrClosed}
	}
	return f.r.Read(p)
}

func (f *gitFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.path, Err: fs.ErrClosed}
	}
	f.closed = true
	return f.r.Close()
}

// gitDirFile is an open directory.
type gitDirFile struct {
	fsys   *gitFS
	path   string
	real   string
	info   *gitFileInfo
	dir    *gitDirNode
	mu     sync.Mutex
	offset int
	closed bool
}

func (d *gitDirFile) Stat() (fs.FileInfo, error) { return d.info, nil }

func (d *gitDirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: errIsDir}
}

func (d *gitDirFile) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return &fs.PathError{Op: "close", Path: d.path, Err: fs.ErrClosed}
	}
	d.closed = true
	return nil
}

func (d *gitDirFile) ReadDir(count int) ([]fs.DirEntry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, &fs.PathError{Op: "readdir", Path: d.path, Err: fs.ErrClosed}
	}
	remaining := d.dir.entries[d.offset:]
	if count > 0 && len(remaining) == 0 {
		return nil, io.EOF
	}
	if count > 0 && count < len(remaining) {
		remaining = remaining[:count]
	}
	d.offset += len(remaining)
	return d.fsys.makeEntries(d.real, remaining), nil
}
