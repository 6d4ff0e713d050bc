package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
)

// DefaultMaxFileSize is the largest file fuelsync reads.
const DefaultMaxFileSize = 64 << 20

// DefaultMaxTotalSize is the most a load reads in all. Decoding costs memory in
// proportion to the input, in the worst case about 200 bytes per byte of YAML
// (a long flow list) and 400 per byte of HCL, so 16 MiB of input stays within
// about 6.5 GiB, and diff's two loads fit a 24 GiB machine with room to spare.
// Real repositories are far smaller (Fuel's own data is under 2 MiB).
const DefaultMaxTotalSize = 16 << 20

// FileCost is what every file a load reads counts against the total budget on
// top of its bytes. An empty file costs the load about 2.5 KiB (its entry in
// the sources, its decoded document, its cluster or plugin and the diagnostics
// that say it is empty); without a cost of its own, 400,000 empty cluster specs
// passed a budget of bytes and took 1 GB. At 1 KiB a file, the default budget
// reads at most 16,384 files; Fuel's own data is 81 files of 7.5 KiB on average.
const FileCost = 1 << 10

// Sources keeps the bytes of every file a load read, so that diagnostics can show the
// source line (hcl.NewDiagnosticTextWriter takes this map).
type Sources struct {
	mu    sync.Mutex
	files map[string]*hcl.File
}

// Add records a file read after the load (a Heat environment, a template), for
// diagnostic snippets.
func (s *Sources) Add(name string, src []byte) { s.add(name, src) }

func (s *Sources) add(name string, src []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]*hcl.File{}
	}
	if _, ok := s.files[name]; !ok {
		s.files[name] = &hcl.File{Bytes: src, Body: hcl.EmptyBody()}
	}
}

// Files returns the files read, by repository-relative path.
func (s *Sources) Files() map[string]*hcl.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*hcl.File, len(s.files))
	for k, v := range s.files {
		out[k] = v
	}
	return out
}

// repoFS reads a repository revision safely: every path stays inside the root
// (symlinks included), files have a size limit, and each file is read and parsed once
// however many documents refer to it.
type repoFS struct {
	fsys     fs.FS
	maxSize  int64
	maxTotal int64
	total    atomic.Int64 // bytes read so far
	spent    atomic.Bool  // the total budget was exceeded (reported once in full)
	sources  *Sources
	cache    *Cache // shared with other loads; nil: none

	mu     sync.Mutex
	parsed map[parsedKey]*parsedFile
	// decodes counts the requests to decode each file (every call of decoded,
	// first or not), and realOf is the file each name read resolved to: a file
	// requested once, under its own name only, was read by one document
	// (ClusterFingerprints).
	decodes map[string]int
	realOf  map[string]string
	dirs    sync.Map // directory → its resolved path and error (resolveLinks)
}

// parsedKey names a file decoded one way (a file may be read in several ways).
type parsedKey struct {
	kind decodeKind
	name string
}

type parsedFile struct {
	once  sync.Once
	value any // what decoders[kind] returns
	diags hcl.Diagnostics
	err   *hcl.Diagnostic // reading failed
}

func newRepoFS(fsys fs.FS, maxSize int64) *repoFS {
	if maxSize <= 0 {
		maxSize = DefaultMaxFileSize
	}
	return &repoFS{fsys: fsys, maxSize: maxSize, maxTotal: DefaultMaxTotalSize, sources: &Sources{}, parsed: map[parsedKey]*parsedFile{},
		decodes: map[string]int{}, realOf: map[string]string{}}
}

// charge counts cost against the total budget for the file name of size
// bytes; it returns a diagnostic when it does not fit.
func (r *repoFS) charge(name string, size, cost int64, at hcl.Range) *hcl.Diagnostic {
	total := r.total.Add(cost)
	if total <= r.maxTotal {
		return nil
	}
	r.total.Add(-cost)
	if r.spent.Swap(true) {
		return errorAt(at, "file %s is not read: the loading budget of %s is spent", name, formatSize(r.maxTotal))
	}
	return withDetail(errorAt(at, "file %s (%s) does not fit in the loading budget: the repository's files add up to more than %s", name, formatSize(size), formatSize(r.maxTotal)),
		budgetDetail)
}

const budgetDetail = "Loading bounds the bytes it reads, in each file and in all (each file counting 1 KiB besides its bytes), " +
	"so that a repository cannot exhaust the memory of the machine reading it. " +
	"If the repository really is this large, raise the budget (fuelsync: FUELSYNC_MAX_REPO_SIZE, and FUELSYNC_MAX_FILE_SIZE for one file)."

// admit checks, before the n files of one listing are read (the cluster specs
// and plugin directories of the repository, the files a glob matches), that
// they fit in what is left of the budget at FileCost each, their bytes not
// counted yet. A listing of hundreds of thousands of files fails at once, with
// one diagnostic at `at` that begins with what, instead of file by file; none
// of its files is read.
func (r *repoFS) admit(n int, what string, at hcl.Range) *hcl.Diagnostic {
	need := int64(n) * FileCost
	left := r.maxTotal - r.total.Load()
	if need <= left {
		return nil
	}
	r.spent.Store(true)
	return withDetail(errorAt(at, "%s: at %s each before their bytes, they need %s of the loading budget of %s (%s left)",
		what, formatSize(FileCost), formatSize(need), formatSize(r.maxTotal), formatSize(max(left, 0))), budgetDetail+" None of them is read.")
}

// formatSize writes a byte count for humans: whole MiB, KiB or bytes.
func formatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

var urlLike = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://|^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:`)
})

// isAbsolute reports whether p is an absolute path (Unix, or Windows with a drive
// letter or a leading backslash).
func isAbsolute(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) ||
		(len(p) > 2 && p[1] == ':' && (p[2] == '/' || p[2] == '\\'))
}

// leavesRoot reports whether a cleaned, slash-separated relative path climbs above
// the repository root.
func leavesRoot(p string) bool { return p == ".." || strings.HasPrefix(p, "../") }

// isExternalRef reports whether ref is an absolute path or a URL.
func isExternalRef(ref string) bool { return urlLike().MatchString(ref) || isAbsolute(ref) }

// resolveRef turns a path written in the file `from` into a repository-relative path.
// Paths are relative to the directory of the file that contains them; an absolute
// path, a URL or a path that climbs out of the repository is an error.
func resolveRef(from, ref string, at hcl.Range) (string, *hcl.Diagnostic) {
	switch {
	case ref == "":
		return "", errorAt(at, "empty path")
	case urlLike().MatchString(ref):
		return "", withDetail(errorAt(at, "path %q is a URL; only files inside the repository can be referenced", ref),
			"fuelsync reads one repository revision and never fetches anything; copy the file into the repository.")
	case isAbsolute(ref):
		return "", withDetail(errorAt(at, "path %q is absolute; paths must be relative to the file that contains them", ref),
			"An absolute path would read the machine running fuelsync, not the repository revision.")
	}
	p := path.Join(path.Dir(from), ref)
	if leavesRoot(p) {
		return "", errorAt(at, "path %q leaves the repository", ref)
	}
	return p, nil
}

// resolveLinks follows symlinks in name, refusing any that leave the repository.
// The directory part is resolved once per directory (a load reads many files from
// few directories); only the last component is checked on every call. File
// systems that cannot report links are trusted.
func (r *repoFS) resolveLinks(name string) (string, error) {
	rl, ok := r.fsys.(fs.ReadLinkFS)
	if !ok || name == "." {
		return name, nil
	}
	dir, base := path.Split(name)
	if dir == "" {
		return r.resolveUncached(rl, name)
	}
	dir = strings.TrimSuffix(dir, "/")
	type resolved struct {
		path string
		err  error
	}
	var rd resolved
	if v, ok := r.dirs.Load(dir); ok {
		rd = v.(resolved)
	} else {
		rd.path, rd.err = r.resolveUncached(rl, dir)
		r.dirs.Store(dir, rd)
	}
	if rd.err != nil {
		return "", rd.err
	}
	full := path.Join(rd.path, base)
	fi, err := rl.Lstat(full)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return full, nil
	}
	return r.resolveUncached(rl, full)
}

// resolveUncached follows symlinks in name component by component.
func (r *repoFS) resolveUncached(rl fs.ReadLinkFS, name string) (string, error) {
	parts := strings.Split(name, "/")
	resolved := "."
	for hops := 0; len(parts) > 0; {
		next := path.Join(resolved, parts[0])
		parts = parts[1:]
		fi, err := rl.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("too many levels of symbolic links")
		}
		target, err := rl.ReadLink(next)
		if err != nil {
			return "", err
		}
		t := path.Join(path.Dir(next), target)
		if isAbsolute(target) || leavesRoot(t) {
			return "", fmt.Errorf("symlink %s points to %s: %w", next, target, ErrEscapesRepo)
		}
		// Restart from the root with the link replaced by its target.
		parts = append(strings.Split(t, "/"), parts...)
		resolved = "."
	}
	return resolved, nil
}

// stat returns the file info of name after following links safely.
func (r *repoFS) stat(name string) (fs.FileInfo, error) {
	real, err := r.resolveLinks(name)
	if err != nil {
		return nil, err
	}
	return fs.Stat(r.fsys, real)
}

// isDir reports whether name is a directory inside the repository.
func (r *repoFS) isDir(name string) bool {
	fi, err := r.stat(name)
	return err == nil && fi.IsDir()
}

// exists reports whether name exists inside the repository.
func (r *repoFS) exists(name string) bool {
	_, err := r.stat(name)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// readFile reads name (repository-relative) or returns a diagnostic at `at`.
func (r *repoFS) readFile(name string, at hcl.Range) ([]byte, *hcl.Diagnostic) {
	if !fs.ValidPath(name) {
		return nil, errorAt(at, "invalid path %q", name)
	}
	real, err := r.resolveLinks(name)
	if err != nil {
		if errors.Is(err, ErrEscapesRepo) {
			return nil, errorAt(at, "%s", err.Error())
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errorAt(at, "file %s does not exist", name)
		}
		return nil, errorAt(at, "reading %s: %s", name, err)
	}
	fi, err := fs.Stat(r.fsys, real)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errorAt(at, "file %s does not exist", name)
		}
		return nil, errorAt(at, "reading %s: %s", name, err)
	}
	if fi.IsDir() {
		return nil, errorAt(at, "%s is a directory, not a file", name)
	}
	if fi.Size() > r.maxSize {
		return nil, errorAt(at, "file %s is %d bytes, over the %s limit", name, fi.Size(), formatSize(r.maxSize))
	}
	if d := r.charge(name, fi.Size(), fi.Size()+FileCost, at); d != nil {
		return nil, d
	}
	r.mu.Lock()
	r.realOf[name] = real
	r.mu.Unlock()
	src, err := r.read(real)
	if err != nil {
		return nil, errorAt(at, "reading %s: %s", name, err)
	}
	if int64(len(src)) > r.maxSize {
		return nil, errorAt(at, "file %s is over the %s limit", name, formatSize(r.maxSize))
	}
	if extra := int64(len(src)) - fi.Size(); extra > 0 { // it grew since the stat
		if d := r.charge(name, extra, extra, at); d != nil {
			return nil, d
		}
	}
	r.sources.add(name, src)
	return src, nil
}

// read reads the file real (links resolved). A file system that names its
// contents (a git revision) lets a cache hand back the bytes of a blob another load
// has read instead of reading it again.
func (r *repoFS) read(real string) ([]byte, error) {
	var id string
	if bh, ok := r.fsys.(BlobHasher); ok && r.cache != nil {
		id, _ = bh.BlobHash(real)
		if src, ok := r.cache.blob(id); ok {
			return src, nil
		}
	}
	src, err := fs.ReadFile(r.fsys, real)
	if err == nil {
		r.cache.addBlob(id, src)
	}
	return src, err
}

// entry returns the slot of name decoded as kind.
func (r *repoFS) entry(kind decodeKind, name string) *parsedFile {
	k := parsedKey{kind, name}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decodes[name]++
	p, ok := r.parsed[k]
	if !ok {
		p = &parsedFile{}
		r.parsed[k] = p
	}
	return p
}

// decoded reads name and decodes it as kind once per load (through the cache, once
// across the loads sharing it); later calls share the result. The diagnostics of
// decoding are returned only to the first caller, so that a file used twice reports
// its problems once. A read failure is reported to every caller at its own
// reference.
func (r *repoFS) decoded(kind decodeKind, name string, at hcl.Range) (any, hcl.Diagnostics) {
	p := r.entry(kind, name)
	first := false
	p.once.Do(func() {
		first = true
		src, d := r.readFile(name, at)
		if d != nil {
			p.err = d
			return
		}
		p.value, p.diags = r.cache.decode(kind, name, src)
	})
	if p.err != nil {
		if first {
			return nil, hcl.Diagnostics{p.err}
		}
		return nil, hcl.Diagnostics{errorAt(at, "%s", p.err.Summary)}
	}
	if first {
		return p.value, p.diags
	}
	return p.value, nil
}

// value is decoded for the kinds that decode to a *Value.
func (r *repoFS) value(kind decodeKind, name string, at hcl.Range) (*Value, hcl.Diagnostics) {
	v, diags := r.decoded(kind, name, at)
	val, _ := v.(*Value)
	return val, diags
}

// data reads and decodes a YAML or JSON file once (see decoded).
func (r *repoFS) data(name string, at hcl.Range) (*Value, hcl.Diagnostics) {
	return r.value(asYAML, name, at)
}
