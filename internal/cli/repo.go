package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fuelsync/fuelsync/loader"
	gitsource "github.com/fuelsync/fuelsync/source"
)

// source is one repository revision to load.
type source struct {
	fsys fs.FS
	// label describes it for humans: the path, or path@rev (sha).
	label string
	// revision is the commit sha read, or a working tree's revision
	// ("working-tree", or <sha>+dirty.<digest> once pinned: pin).
	revision string
	// worktree says fsys is the working tree on disk (g.repo).
	worktree bool
	// prefix is prepended to repository-relative file names in diagnostics so they
	// are relative to the current directory, as compilers print them.
	prefix string
	// cache shares decoded files with other sources (diff's two revisions).
	cache *loader.Cache
}

// isBareRepo reports whether dir looks like a bare git repository.
func isBareRepo(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return false
	}
	for _, n := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			return false
		}
	}
	return true
}

// isFuelsyncRoot reports whether dir, on disk, holds plugins/ or clusters/.
func isFuelsyncRoot(dir string) bool {
	for _, n := range []string{"plugins", "clusters"} {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// enclosingRoot returns the nearest directory above dir that is a fuelsync
// repository, as a path relative to dir's ("..", "repo" for "repo/clusters"),
// or "" when there is none below the top of the git work tree dir is in (or
// the file system root).
func enclosingRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	rel := dir
	for {
		if _, err := os.Stat(filepath.Join(abs, ".git")); err == nil && !isFuelsyncRoot(abs) {
			return "" // the top of a git work tree that is not a fuelsync repository
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return ""
		}
		abs, rel = parent, filepath.Join(rel, "..")
		if isFuelsyncRoot(abs) {
			return filepath.Clean(rel)
		}
	}
}

// hasRepoLayout reports whether a revision holds plugins/ or clusters/.
func hasRepoLayout(fsys fs.FS) bool {
	for _, n := range []string{"plugins", "clusters"} {
		if fi, err := fs.Stat(fsys, n); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// notARepo is the error for a directory (or revision) without the layout of a
// fuelsync repository.
func notARepo(dir, at string) error {
	msg := fmt.Sprintf("no plugins/ or clusters/ in %s%s: it is not a fuelsync repository", dir, at)
	if root := enclosingRoot(dir); root != "" {
		msg += fmt.Sprintf("\nhint: %s is inside the repository %s; use --repo %s", dir, root, root)
	} else {
		msg += "\nhint: --repo names the repository's root, the directory that holds plugins/ and clusters/ (fuelsync plugin create starts one)"
	}
	return &exitError{code: 1, msg: msg}
}

// defaultWorkdir is the default of --workdir, relative to the repository's root.
const defaultWorkdir = ".fuelsync"

// locateRepo finds the repository root upward, as git does, when --repo is the
// current directory and that is not a repository: g.repo becomes the root, and
// a default --workdir moves with it. It does nothing otherwise.
func (g *globals) locateRepo() {
	if filepath.Clean(g.repo) != "." || isFuelsyncRoot(".") || isBareRepo(".") {
		return
	}
	if root := enclosingRoot("."); root != "" {
		g.repo = root
		if g.workdir == defaultWorkdir {
			g.workdir = filepath.Join(root, defaultWorkdir)
		}
	}
}

// openSource opens the working tree of g.repo, or revision g.rev from its git
// objects (the folder g.repo is in its git repository's trees: gitRepo). A
// bare repository has no working tree, so it is read at HEAD by default.
// g.repo must be a fuelsync repository (plugins/ or clusters/ present); when it is
// the current directory and is not one, the root is looked for upward, as git
// does, and g.repo becomes that root.
func openSource(g *globals) (*source, error) {
	if err := checkLoadEnv(); err != nil {
		return nil, err
	}
	g.locateRepo()
	if isRemote(g.repo) {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("--repo %s is a URL: only watch and serve fetch a repository from a URL; "+
			"%s reads a directory (a working tree or a bare repository): clone it first (git clone %s DIR) and give --repo DIR",
			g.repo, g.command, g.repo)}
	}
	fi, err := os.Stat(g.repo)
	if errors.Is(err, fs.ErrNotExist) && g.rev != "" {
		// A folder that is not in the working tree may be in the
		// revision: its git repository says.
		if _, _, gerr := g.gitRepo(""); gerr == nil {
			err, fi = nil, nil
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &exitError{code: 1, msg: fmt.Sprintf("repository %s does not exist", g.repo)}
	case err != nil:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("repository %s: %v", g.repo, err)}
	case fi != nil && !fi.IsDir():
		return nil, &exitError{code: 1, msg: fmt.Sprintf("repository %s is not a directory", g.repo)}
	}
	shown := g.shownRepo()
	prefix := ""
	if clean := filepath.ToSlash(filepath.Clean(shown)); clean != "." {
		prefix = clean + "/"
	}
	rev := g.rev
	if rev == "" && isBareRepo(g.repo) {
		rev = "HEAD"
	}
	if rev == "" {
		fsys := os.DirFS(g.repo)
		if !hasRepoLayout(fsys) {
			return nil, notARepo(g.repo, "")
		}
		return &source{fsys: fsys, label: g.repo, prefix: prefix, revision: gitsource.WorkingTree, worktree: true}, nil
	}
	top, dir, err := g.gitRepo("--rev and diff read")
	if err != nil {
		return nil, err
	}
	fsys, hash, _, err := loader.OpenRevisionDir(top, rev, dir)
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	if !hasRepoLayout(fsys) {
		return nil, notARepo(shown, fmt.Sprintf(" at %s (%.12s)", rev, hash))
	}
	return &source{fsys: fsys, label: fmt.Sprintf("%s@%s (%.12s)", shown, rev, hash), prefix: prefix, revision: hash}, nil
}

// pin names a working tree by its commit: the commit at HEAD, read from git,
// when the tree's inputs are that commit's, else <commit>+dirty.<digest>
// (source.PinWorktree); a tree in no git repository stays "working-tree". The
// revision a plan or an apply records is then a commit whenever it can be.
func (src *source) pin(g *globals) {
	if !src.worktree {
		return
	}
	top, dir, err := g.gitRepo("")
	if err != nil {
		return
	}
	rev := gitsource.PinWorktree(top, dir, src.fsys, loadOptions(src.cache), inputSkip(g, src)...)
	src.revision, src.fsys = rev.SHA, rev.FS
	src.worktree = gitsource.IsWorkingTree(rev.SHA)
}

// gitRepo is where the commits of the repository g.repo are: the git
// repository to open (g.repo itself when it is bare, else the top of the git
// work tree it is in, as git finds it) and the folder to read of its trees (a
// slash path: g.path for a bare repository, else the way from the top to
// g.repo; "" for the top). what names who reads the commits, for the error
// when there is no git repository ("--rev and diff read", "watch follows").
func (g *globals) gitRepo(what string) (top, dir string, err error) {
	if isBareRepo(g.repo) {
		return g.repo, g.path, nil
	}
	abs, err := filepath.Abs(g.repo)
	if err != nil {
		return "", "", &exitError{code: 1, msg: fmt.Sprintf("repository %s: %v", g.repo, err)}
	}
	for p := abs; ; p = filepath.Dir(p) {
		if _, err := os.Stat(filepath.Join(p, ".git")); err == nil {
			rel, err := filepath.Rel(p, abs)
			if err != nil {
				return "", "", &exitError{code: 1, msg: fmt.Sprintf("repository %s: %v", g.repo, err)}
			}
			if rel == "." {
				return g.repo, "", nil
			}
			return p, filepath.ToSlash(rel), nil
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	return "", "", &exitError{code: 1, msg: fmt.Sprintf("%s is not a git repository (no .git in it or above it)\n"+
		"hint: %s commits of a git repository; make %s one (git init, git add, git commit)", g.repo, what, g.repo)}
}

// shownRepo is the repository as messages and file names show it: g.repo,
// and the folder read of a bare repository's trees.
func (g *globals) shownRepo() string {
	if g.path != "" {
		return filepath.Join(g.repo, filepath.FromSlash(g.path))
	}
	return g.repo
}

// usePath checks --path and, for a repository with a working tree, makes
// g.repo the folder it names (--repo joined with --path), the fuelsync
// repository on disk: its git repository is found from there (gitRepo). A
// bare repository or a URL keeps it in g.path, the folder read of its trees.
func (g *globals) usePath() error {
	if g.path == "" {
		return nil
	}
	p, err := repoFolder(g.path)
	if err != nil {
		return &exitError{code: 1, msg: fmt.Sprintf("--path %s: %v", g.path, err)}
	}
	g.path = p
	if p == "" || isRemote(g.repo) || isBareRepo(g.repo) {
		return nil
	}
	g.repo, g.path = filepath.Join(g.repo, filepath.FromSlash(p)), ""
	return nil
}

// repoFolder is --path as a slash path from the top of the repository ("" for
// the top): relative, never out of it ("..") nor into a .git directory.
func repoFolder(p string) (string, error) {
	clean := path.Clean(filepath.ToSlash(p))
	switch {
	case clean == ".":
		return "", nil
	case path.IsAbs(clean) || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", errors.New("is absolute: it is the folder's path from the top of the repository (--repo)")
	case !fs.ValidPath(clean):
		return "", errors.New("leads out of the repository: it is the folder's path from its top (--repo)")
	}
	for _, comp := range strings.Split(clean, "/") {
		if strings.EqualFold(comp, ".git") {
			return "", errors.New("is inside a .git directory")
		}
	}
	return clean, nil
}

// Environment variables that change the loading budget (sizes in bytes, or with
// a KiB, MiB or GiB suffix).
const (
	envMaxFileSize = "FUELSYNC_MAX_FILE_SIZE"
	envMaxRepoSize = "FUELSYNC_MAX_REPO_SIZE"
)

// loadOptions are the options of every load: the budget from the environment
// (openSource has checked it) and the cache, if any.
func loadOptions(cache *loader.Cache) loader.Options {
	file, _ := envSize(envMaxFileSize)
	total, _ := envSize(envMaxRepoSize)
	return loader.Options{MaxFileSize: file, MaxTotalSize: total, Cache: cache}
}

// checkLoadEnv reports a budget variable that is set but not a size.
func checkLoadEnv() error {
	for _, name := range []string{envMaxFileSize, envMaxRepoSize} {
		if _, err := envSize(name); err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
	}
	return nil
}

// envSize reads a size from the environment variable name; 0 when unset.
func envSize(name string) (int64, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return 0, nil
	}
	n, err := parseSize(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %v", name, v, err)
	}
	return n, nil
}

// parseSize reads "1048576", "512KiB", "64MiB", "2GiB" (also KB, MB, GB, K, M, G,
// all powers of 1024).
func parseSize(s string) (int64, error) {
	num := strings.TrimRight(s, "KMGiBkmgib ")
	unit := strings.ToUpper(strings.TrimSpace(s[len(num):]))
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("want a positive size such as 67108864, 512KiB, 64MiB or 2GiB")
	}
	shift := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20, "G": 30, "GB": 30, "GIB": 30}
	sh, ok := shift[unit]
	if !ok || n > math.MaxInt64>>sh {
		return 0, errors.New("want a positive size such as 67108864, 512KiB, 64MiB or 2GiB")
	}
	return n << sh, nil
}

// loadRepo opens and loads the repository of a command that reads it whole
// (components, tags list, roles list): one that does not load is refused,
// its diagnostics printed.
func loadRepo(g *globals) (*source, *loader.Repo, error) {
	return loadRepoOr(g, "the repository does not load; run 'fuelsync validate' for every problem")
}

// loadRepoOr opens and loads the repository; one that does not load is
// refused with msg, its diagnostics printed.
func loadRepoOr(g *globals, msg string) (*source, *loader.Repo, error) {
	src, err := openSource(g)
	if err != nil {
		return nil, nil, err
	}
	repo, diags := loader.Load(src.fsys, loadOptions(nil))
	if diags.HasErrors() {
		g.writeDiagnostics(g.stderr, diags, repo.Sources.Files(), src.prefix)
		return nil, nil, &exitError{code: 1, msg: msg}
	}
	return src, repo, nil
}
