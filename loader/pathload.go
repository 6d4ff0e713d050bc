package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/hashicorp/hcl/v2"
)

// keptPathKeys name directories that upstream never loads even when they do not
// exist in the repository (fuel-plugin-builder packs them separately).
var keptPathKeys = map[string]bool{"deployment_scripts_path": true, "repository_path": true}

// pathLoader resolves `_path` keys: a key ending in `_path` whose value is
// a string naming a file or a glob is replaced by the data it names, under the key
// without the suffix; a directory is left as it is. Files loaded that way have their
// own `_path` keys resolved, with cycle detection.
type pathLoader struct {
	r *repoFS

	mu   sync.Mutex
	done map[string]*Value // expanded documents, by file
}

func newPathLoader(r *repoFS) *pathLoader {
	return &pathLoader{r: r, done: map[string]*Value{}}
}

// expandFile loads a YAML/JSON file and resolves the `_path` keys inside it. stack
// holds the files being expanded, outermost first, for cycle detection.
func (pl *pathLoader) expandFile(name string, at hcl.Range, stack []string) (*Value, hcl.Diagnostics) {
	for i, s := range stack {
		if s == name {
			cycle := append(append([]string{}, stack[i:]...), name)
			return nil, hcl.Diagnostics{withDetail(errorAt(at, "_path cycle: %s", strings.Join(cycle, " -> ")),
				"A file loaded through a _path key refers back to a file that is still being loaded.")}
		}
	}
	pl.mu.Lock()
	v, ok := pl.done[name]
	pl.mu.Unlock()
	if ok {
		return v, nil
	}
	v, diags := pl.r.data(name, at)
	if v == nil {
		return nil, diags
	}
	v, more := pl.walk(v, name, append(stack, name))
	diags = append(diags, more...)
	if !more.HasErrors() {
		pl.mu.Lock()
		pl.done[name] = v
		pl.mu.Unlock()
	}
	return v, diags
}

// walk returns v with every `_path` key below it resolved; file is the document v
// was read from (paths are relative to its directory).
func (pl *pathLoader) walk(v *Value, file string, stack []string) (*Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	switch v.Kind {
	case KindList:
		var items []*Value
		for i, it := range v.Items {
			if it.Kind != KindMap && it.Kind != KindList {
				if items != nil {
					items = append(items, it)
				}
				continue
			}
			nv, d := pl.walk(it, file, stack)
			diags = append(diags, d...)
			if nv != it && items == nil {
				items = append(make([]*Value, 0, len(v.Items)), v.Items[:i]...)
			}
			if items != nil {
				items = append(items, nv)
			}
		}
		if items != nil {
			out := *v
			out.Items = items
			return &out, diags
		}
		return v, diags
	case KindMap:
		// Copy the fields only once one of them changes: most mappings have no
		// `_path` key anywhere below them.
		var fields []Field
		for i, f := range v.Fields {
			nf := f
			if strings.HasSuffix(f.Key, "_path") && len(f.Key) > len("_path") && f.Value.Kind == KindString {
				loaded, key, d := pl.load(v, f, file, stack)
				diags = append(diags, d...)
				if loaded != nil {
					nf = Field{Key: key, KeyRange: f.KeyRange, Value: loaded}
				}
			} else if f.Value.Kind == KindMap || f.Value.Kind == KindList {
				nv, d := pl.walk(f.Value, file, stack)
				diags = append(diags, d...)
				nf.Value = nv
			}
			if fields == nil && (nf.Key != f.Key || nf.Value != f.Value) {
				fields = append(make([]Field, 0, len(v.Fields)), v.Fields[:i]...)
			}
			if fields != nil {
				fields = append(fields, nf)
			}
		}
		if fields != nil {
			out := *v
			out.Fields = fields
			return &out, diags
		}
		return v, diags
	}
	return v, nil
}

func hasGlobMeta(s string) bool { return strings.ContainsAny(s, "*?[{") }

var dataExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// load resolves one `_path` field of mapping m. It returns nil (and keeps the key as
// written) for directories and for the keys upstream always keeps.
func (pl *pathLoader) load(m *Value, f Field, file string, stack []string) (*Value, string, hcl.Diagnostics) {
	if keptPathKeys[f.Key] {
		return nil, "", nil
	}
	at := f.Value.Range
	if len(stack) > 1 && isExternalRef(f.Value.Text) {
		// Inside a document that was itself loaded through a `_path` key, an absolute
		// path or URL is data, not a reference: the nailgun fixture has
		// `state_path: "/var/lib/nova"`. It is kept as written and never read.
		return nil, "", nil
	}
	p, d := resolveRef(file, f.Value.Text, at)
	if d != nil {
		return nil, "", hcl.Diagnostics{d}
	}
	key := strings.TrimSuffix(f.Key, "_path")
	if m.Has(key) {
		return nil, "", hcl.Diagnostics{errorAt(f.KeyRange, "both %s and %s are set; keep one", key, f.Key)}
	}
	if !hasGlobMeta(p) {
		fi, err := pl.r.stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil, "", nil
		case errors.Is(err, fs.ErrNotExist):
			return nil, "", hcl.Diagnostics{withDetail(errorAt(at, "%s: file %s does not exist", f.Key, p),
				"The path is relative to the directory of "+file+".")}
		case err != nil:
			return nil, "", hcl.Diagnostics{errorAt(at, "%s: %s", f.Key, err)}
		}
		if !dataExts[path.Ext(p)] {
			return nil, "", hcl.Diagnostics{errorAt(at, "%s: %s is not a .yaml, .yml or .json file", f.Key, p)}
		}
		v, diags := pl.expandFile(p, at, stack)
		return v, key, diags
	}
	// The walk sees the repository through globFS: a link in the glob's fixed
	// prefix is resolved as single files are (one leaving the repository is an
	// error), and links to directories met while expanding wildcards are not
	// followed (NoFollow), so a glob never walks out of the repository nor loops.
	matches, err := doublestar.Glob(globFS{pl.r}, p, doublestar.WithFilesOnly(), doublestar.WithFailOnIOErrors(), doublestar.WithNoFollow())
	if errors.Is(err, ErrEscapesRepo) {
		return nil, "", hcl.Diagnostics{errorAt(at, "%s: %s", f.Key, unwrapPathError(err))}
	}
	if err != nil {
		return nil, "", hcl.Diagnostics{errorAt(at, "%s: bad glob %q: %s", f.Key, f.Value.Text, err)}
	}
	files := matches[:0]
	for _, mt := range matches {
		if dataExts[path.Ext(mt)] {
			files = append(files, mt)
		}
	}
	if len(files) == 0 {
		return nil, "", hcl.Diagnostics{withDetail(errorAt(at, "%s: no .yaml, .yml or .json file matches %s", f.Key, p),
			"The glob is relative to the directory of "+file+"; ** matches any number of directories.")}
	}
	if d := pl.r.admit(len(files), fmt.Sprintf("%s: %s matches %d files", f.Key, p, len(files)), at); d != nil {
		return nil, "", hcl.Diagnostics{d}
	}
	// doublestar returns matches in directory-walk order; the spec wants sorted paths.
	slices.Sort(files)
	vals, diags := pl.expandAll(files, at, stack)
	merged, d2 := mergeRoots(f.Key, files, vals, at)
	return merged, key, append(diags, d2...)
}

// expandAll expands several files in parallel (the parse is the expensive part),
// returning their values in the order given.
func (pl *pathLoader) expandAll(files []string, at hcl.Range, stack []string) ([]*Value, hcl.Diagnostics) {
	vals := make([]*Value, len(files))
	diags := make([]hcl.Diagnostics, len(files))
	parallel(len(files), func(i int) {
		// Each goroutine needs its own copy of the stack slice.
		vals[i], diags[i] = pl.expandFile(files[i], at, append([]string(nil), stack...))
	})
	var all hcl.Diagnostics
	for _, d := range diags {
		all = append(all, d...)
	}
	return vals, all
}

// mergeRoots combines the documents a glob matched: lists are concatenated, mappings
// merged key by key (a later file wins, with a warning naming both), and a mix of
// lists and mappings is an error. Empty (null) documents are skipped.
func mergeRoots(key string, files []string, vals []*Value, at hcl.Range) (*Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var listFile, mapFile string
	for i, v := range vals {
		if v == nil {
			continue
		}
		switch v.Kind {
		case KindList:
			if listFile == "" {
				listFile = files[i]
			}
		case KindMap:
			if mapFile == "" {
				mapFile = files[i]
			}
		case KindNull:
		default:
			diags = append(diags, errorAt(v.Range, "%s: the document must be a list or a mapping, not a %s", key, v.Kind))
		}
	}
	if listFile != "" && mapFile != "" {
		return nil, append(diags, withDetail(errorAt(at, "%s: the matched files mix lists and mappings: %s is a list, %s is a mapping", key, listFile, mapFile),
			"All files a glob matches must have the same kind of root: lists are concatenated, mappings are merged."))
	}
	if len(vals) == 1 {
		return vals[0], diags
	}
	out := &Value{Kind: KindNull, Range: at}
	switch {
	case listFile != "":
		out.Kind = KindList
		for _, v := range vals {
			if v != nil && v.Kind == KindList {
				out.Items = append(out.Items, v.Items...)
			}
		}
	case mapFile != "":
		out.Kind = KindMap
		owner := map[string]int{}
		for i, v := range vals {
			if v == nil || v.Kind != KindMap {
				continue
			}
			for _, f := range v.Fields {
				if j, ok := owner[f.Key]; ok {
					diags = append(diags, warnAt(f.KeyRange, "%s: key %q of %s overrides the one in %s", key, f.Key, files[i], files[j]))
					for k := range out.Fields {
						if out.Fields[k].Key == f.Key {
							out.Fields[k] = f
						}
					}
				} else {
					out.Fields = append(out.Fields, f)
				}
				owner[f.Key] = i
			}
		}
	}
	return out, diags
}

// globFS is the repository as a glob walks it: every path is resolved with the
// repository's own link rules (resolveLinks) before it is opened, listed or
// stat'ed.
type globFS struct{ r *repoFS }

func (g globFS) resolve(op, name string) (string, error) {
	real, err := g.r.resolveLinks(name)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	return real, nil
}

func (g globFS) Open(name string) (fs.File, error) {
	real, err := g.resolve("open", name)
	if err != nil {
		return nil, err
	}
	return g.r.fsys.Open(real)
}

func (g globFS) Stat(name string) (fs.FileInfo, error) {
	real, err := g.resolve("stat", name)
	if err != nil {
		return nil, err
	}
	return fs.Stat(g.r.fsys, real)
}

func (g globFS) ReadDir(name string) ([]fs.DirEntry, error) {
	real, err := g.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	return fs.ReadDir(g.r.fsys, real)
}

// unwrapPathError drops the operation and path a PathError adds to the error of
// resolveLinks, which names the link already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
