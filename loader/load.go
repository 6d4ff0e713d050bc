package loader

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Options tune a load.
type Options struct {
	// MaxFileSize is the largest file read; 0 means DefaultMaxFileSize (64 MiB).
	MaxFileSize int64
	// MaxTotalSize is the most the load reads in all files together; 0 means
	// DefaultMaxTotalSize (16 MiB).
	MaxTotalSize int64
	// Cache shares decoded files with the other loads given the same cache (diff's
	// two revisions); nil: no sharing.
	Cache *Cache
}

// loadCtx is the state of one load of one revision.
type loadCtx struct {
	r     *repoFS
	paths *pathLoader
}

// MsgNoReleases is the message for a cluster in a repository without releases.
const MsgNoReleases = "no releases are installed: add a plugin whose metadata.yaml has a release with is_release: true"

// Load reads one revision of a config repository from fsys (the repository root) and
// validates its structure: plugins, the releases they define, and cluster specs with
// their references. It never writes anything. All problems are returned, sorted; the
// Repo is returned even when there are errors, with what could be loaded.
func Load(fsys fs.FS, opts Options) (*Repo, hcl.Diagnostics) {
	r := newRepoFS(fsys, opts.MaxFileSize)
	if opts.MaxTotalSize > 0 {
		r.maxTotal = opts.MaxTotalSize
	}
	r.cache = opts.Cache
	l := &loadCtx{r: r, paths: newPathLoader(r)}
	repo := &Repo{Sources: r.sources, FS: fsys}
	var diags hcl.Diagnostics

	// 1. Repository settings.
	settings, d := l.loadSettings()
	repo.Settings = settings
	diags = append(diags, d...)

	// 2. Plugins and cluster specs, all in one pool: parsing is most of the work,
	// and clusters do not depend on plugins until their references are checked.
	dirs, d := l.pluginDirs()
	diags = append(diags, d...)
	files, d := l.clusterFiles()
	diags = append(diags, d...)
	if d := r.admit(len(dirs)+len(files), "the repository holds "+count(len(files), "cluster spec")+" and "+count(len(dirs), "plugin directory"), fileRange("clusters")); d != nil {
		diags = append(diags, d)
		dirs, files = nil, nil
	}
	plugins := make([]*Plugin, len(dirs))
	clusters := make([]*Cluster, len(files))
	jdiags := make([]hcl.Diagnostics, len(dirs)+len(files))
	parallel(len(dirs)+len(files), func(i int) {
		if i < len(dirs) {
			plugins[i], jdiags[i] = l.loadPlugin(dirs[i])
		} else {
			clusters[i-len(dirs)], jdiags[i] = l.loadCluster(files[i-len(dirs)])
		}
	})
	for _, d := range jdiags {
		diags = append(diags, d...)
	}
	for _, p := range plugins {
		if p != nil {
			repo.Plugins = append(repo.Plugins, p)
		}
	}
	for _, c := range clusters {
		if c != nil {
			repo.Clusters = append(repo.Clusters, c)
		}
	}

	// 3. What involves several documents: unique names, references.
	diags = append(diags, checkPluginSet(repo)...)
	diags = append(diags, checkClusterSet(repo)...)
	repo.owned = ownedSpecs(repo, r)
	return repo, SortDiagnostics(diags)
}

// count is "1 cluster spec", "2 cluster specs", "2 plugin directories".
func count(n int, one string) string {
	switch {
	case n == 1:
		return "1 " + one
	case strings.HasSuffix(one, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(one, "y"))
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// parallel runs f(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// readDir lists a directory of the repository; a missing directory is empty.
func (l *loadCtx) readDir(dir string) ([]fs.DirEntry, hcl.Diagnostics) {
	entries, err := fs.ReadDir(l.r.fsys, dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, hcl.Diagnostics{errorAt(fileRange(dir), "reading %s: %s", dir, err)}
	}
	return entries, nil
}

// isDirEntry reports whether a directory entry is a directory, following a symlink
// only when it stays inside the repository.
func (l *loadCtx) isDirEntry(dir string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	return e.Type()&fs.ModeSymlink != 0 && l.r.isDir(path.Join(dir, e.Name()))
}

// escapingLink reports a directory entry that is a symlink the loader cannot follow
// safely (its target leaves the repository, or it loops).
func (l *loadCtx) escapingLink(dir string, e fs.DirEntry) *hcl.Diagnostic {
	if e.Type()&fs.ModeSymlink == 0 {
		return nil
	}
	full := path.Join(dir, e.Name())
	if _, err := l.r.stat(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorAt(fileRange(full), "%s", err)
	}
	return nil
}

// pluginDirs lists plugins/<dir> directories, sorted.
func (l *loadCtx) pluginDirs() ([]string, hcl.Diagnostics) {
	entries, diags := l.readDir("plugins")
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if d := l.escapingLink("plugins", e); d != nil {
			diags = append(diags, d)
			continue
		}
		if l.isDirEntry("plugins", e) {
			dirs = append(dirs, path.Join("plugins", e.Name()))
		}
	}
	return dirs, diags
}

// clusterFiles lists clusters/<name>.yaml|yml|hcl and clusters/<name>/cluster.yaml|yml|hcl.
func (l *loadCtx) clusterFiles() ([]string, hcl.Diagnostics) {
	entries, diags := l.readDir("clusters")
	var files []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		full := path.Join("clusters", name)
		if d := l.escapingLink("clusters", e); d != nil {
			diags = append(diags, d)
			continue
		}
		if l.isDirEntry("clusters", e) {
			for _, n := range []string{"cluster.yaml", "cluster.yml", "cluster.hcl"} {
				if l.r.exists(path.Join(full, n)) {
					files = append(files, path.Join(full, n))
					break
				}
			}
			continue
		}
		switch path.Ext(name) {
		case ".yaml", ".yml", ".hcl":
			files = append(files, full)
		}
	}
	return files, diags
}

// checkPluginSet checks what involves several plugins: unique names, unique releases.
func checkPluginSet(repo *Repo) hcl.Diagnostics {
	var diags hcl.Diagnostics
	byName := map[string]*Plugin{}
	for _, p := range repo.Plugins {
		if p.Name == "" {
			continue
		}
		if prev, dup := byName[p.Name]; dup {
			diags = append(diags, errorAt(p.NameRange, "plugin %q is defined twice: in %s and %s", p.Name, prev.Dir, p.Dir))
			continue
		}
		byName[p.Name] = p
	}
	seen := map[string]*Release{}
	for _, p := range repo.Plugins {
		for _, r := range p.Defines {
			key := r.Name + "@" + r.Version
			if prev, dup := seen[key]; dup {
				diags = append(diags, errorAt(r.Range, "release %q version %s is defined twice: by plugin %s and plugin %s", r.Name, r.Version, prev.Plugin.Name, p.Name))
				continue
			}
			seen[key] = r
			repo.Releases = append(repo.Releases, r)
		}
	}
	return diags
}

// dependencyCycles reports each cycle of depends_on once, at the entry of the
// cluster that comes first in file order that closes it.
func dependencyCycles(repo *Repo) hcl.Diagnostics {
	var diags hcl.Diagnostics
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(c *Cluster)
	visit = func(c *Cluster) {
		state[c.Name] = open
		stack = append(stack, c.Name)
		for _, dep := range c.DependsOn {
			next := repo.Cluster(dep.Cluster)
			if next == nil || next == c {
				continue
			}
			switch state[next.Name] {
			case open:
				i := slices.Index(stack, next.Name)
				cycle := append([]string{c.Name}, stack[i:]...) // from c, back to c
				diags = append(diags, withDetail(errorAt(dep.Range, "cluster %s: depends_on makes a cycle: %s", c.Name, strings.Join(cycle, " -> ")),
					"Clusters that wait for each other are never applied; remove one of these entries."))
			case unseen:
				visit(next)
			}
		}
		stack = stack[:len(stack)-1]
		state[c.Name] = done
	}
	for _, c := range repo.Clusters {
		if state[c.Name] == unseen {
			visit(c)
		}
	}
	return diags
}

func clusterList(repo *Repo) string {
	var names []string
	for _, c := range repo.Clusters {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// FindRelease returns the releases a cluster's `release:` matches: a version, a name,
// or name@version.
func (repo *Repo) FindRelease(ref string) []*Release {
	var out []*Release
	name, version, hasAt := strings.Cut(ref, "@")
	for _, r := range repo.Releases {
		switch {
		case hasAt && r.Name == name && r.Version == version,
			!hasAt && (r.Version == ref || r.Name == ref):
			out = append(out, r)
		}
	}
	return out
}

// FindPlugin returns the plugin named ref (name or name@version), or nil.
func (repo *Repo) FindPlugin(ref string) *Plugin {
	name, version, hasAt := strings.Cut(ref, "@")
	for _, p := range repo.Plugins {
		if p.Name == name && (!hasAt || p.Version == version) {
			return p
		}
	}
	return nil
}

// Cluster returns the cluster named name, or nil.
func (repo *Repo) Cluster(name string) *Cluster {
	for _, c := range repo.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// checkClusterSet checks cluster references: unique cluster names, the release and
// plugins they name.
func checkClusterSet(repo *Repo) hcl.Diagnostics {
	diags := dependencyCycles(repo)
	names := map[string]*Cluster{}
	for _, c := range repo.Clusters {
		if prev, dup := names[c.Name]; dup {
			diags = append(diags, errorAt(c.NameRange, "cluster %q is defined twice: in %s and %s", c.Name, prev.File, c.File))
		}
		names[c.Name] = c
		switch rels := repo.FindRelease(c.Release); {
		case c.Release == "":
		case len(repo.Releases) == 0:
			diags = append(diags, errorAt(c.ReleaseRange, "cluster %s: %s", c.Name, MsgNoReleases))
		case len(rels) == 0:
			diags = append(diags, withDetail(errorAt(c.ReleaseRange, "cluster %s: unknown release %q; known releases: %s", c.Name, c.Release, releaseList(repo)),
				"release: is a release version, a release name, or name@version."))
		case len(rels) > 1:
			diags = append(diags, errorAt(c.ReleaseRange, "cluster %s: release %q matches %d releases; write name@version: %s", c.Name, c.Release, len(rels), releaseList(repo)))
		}
		for _, dep := range c.DependsOn {
			switch {
			case dep.Cluster == c.Name:
				diags = append(diags, errorAt(dep.Range, "cluster %s: depends_on names the cluster itself", c.Name))
			case repo.Cluster(dep.Cluster) == nil:
				diags = append(diags, withDetail(errorAt(dep.Range, "cluster %s: depends_on names unknown cluster %s; clusters in this repository: %s", c.Name, quoteShort(dep.Cluster), clusterList(repo)),
					"depends_on lists clusters of this repository that must be synced at a revision before this one is applied at it."))
			}
		}
		for _, pr := range c.Plugins {
			p := repo.FindPlugin(pr.Name)
			if p == nil {
				diags = append(diags, errorAt(pr.Range, "cluster %s: unknown plugin %q; plugins in this repository: %s", c.Name, pr.Name, pluginList(repo)))
				continue
			}
			if len(p.Defines) > 0 {
				diags = append(diags, withDetail(errorAt(pr.Range, "cluster %s: plugin %q defines a release; choose it with release:, not plugins:", c.Name, pr.Name),
					"plugins: lists plugins that extend the cluster's release."))
			}
		}
	}
	return diags
}

func releaseList(repo *Repo) string {
	var parts []string
	for _, r := range repo.Releases {
		parts = append(parts, fmt.Sprintf("%s (%s)", r.Version, r.Name))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func pluginList(repo *Repo) string {
	var names []string
	for _, p := range repo.Plugins {
		if p.Name != "" && len(p.Defines) == 0 {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// LoadSettings reads only the settings file of the repository revision fsys
// (fuelsync.yaml, .yml or .hcl; zero Settings when there is none), for the
// commands that need them before loading the rest: the work directory, and the
// defaults of watch and serve.
func LoadSettings(fsys fs.FS) (Settings, hcl.Diagnostics) {
	r := newRepoFS(fsys, 0)
	l := &loadCtx{r: r, paths: newPathLoader(r)}
	return l.loadSettings()
}

// checkServeSettings checks the values of the settings that stand for flags:
// interval a positive duration, publish "git", workdir and publish_branch not
// empty, workdir inside the repository (CheckWorkdirSetting), publish_branch a
// branch name (CheckBranchName). A bad one is an error at its value, and left
// out of s.
func checkServeSettings(c *checker, v *Value, s *Settings, name string) {
	bad := func(key string, field *string, why, detail string) {
		c.diags = append(c.diags, withDetail(errorAt(v.Get(key).Range, "%s: %s %s", name, key, why), detail))
		*field = ""
	}
	if s.Interval != "" {
		if d, err := time.ParseDuration(s.Interval); err != nil || d <= 0 {
			bad("interval", &s.Interval, fmt.Sprintf("%q is not a positive duration", s.Interval),
				"The interval of watch and serve is written as Go durations are: 30s, 5m, 1h30m.")
		}
	}
	if s.Publish != "" && s.Publish != "git" {
		bad("publish", &s.Publish, fmt.Sprintf("%q is not a way to publish", s.Publish),
			"publish: git commits every applied set to publish_branch; leave it out to publish nothing.")
	}
	switch {
	case strings.Contains(s.State, "@"):
		// Not repeated: it may hold a password.
		bad("state", &s.State, "has an @ in it: credentials (user:password@host) do not go into the state URL",
			"Credentials go in the file --etcd-auth-file names (one line, USER:PASSWORD), never in the repository or a URL.")
	case s.State != "" && !strings.HasPrefix(s.State, "etcd://"):
		bad("state", &s.State, fmt.Sprintf("%q is not an etcd:// address", s.State),
			"state: etcd://host1:2379,host2:2379/prefix keeps the state on etcd; leave it out to keep it in the work directory.")
	}
	for _, key := range []string{"workdir", "publish_branch"} {
		field := &s.Workdir
		if key == "publish_branch" {
			field = &s.PublishBranch
		}
		if str, ok := v.Get(key).Str(); ok && strings.TrimSpace(str) == "" {
			bad(key, field, "is empty", "Leave it out for the default.")
		}
	}
	if s.Workdir != "" {
		if err := CheckWorkdirSetting(s.Workdir); err != nil {
			bad("workdir", &s.Workdir, fmt.Sprintf("%q %v", s.Workdir, err),
				"workdir is relative to the repository and stays inside it, outside .git.")
		}
	}
	if s.PublishBranch != "" {
		if err := CheckBranchName(s.PublishBranch); err != nil {
			bad("publish_branch", &s.PublishBranch, err.Error(),
				"A branch name is checked as git check-ref-format --branch checks it, and HEAD is refused: main.lock, for one, is git's lock file of main.")
		}
	}
}

// loadSettings reads fuelsync.yaml (fuelsync.hcl is read the same way by
// settingsFromHCL).
func (l *loadCtx) loadSettings() (Settings, hcl.Diagnostics) {
	s := Settings{FeatureGroups: []string{"experimental", "advanced"}}
	for _, name := range []string{"fuelsync.yaml", "fuelsync.yml", "fuelsync.hcl"} {
		if !l.r.exists(name) {
			continue
		}
		s.File = name
		var v *Value
		var diags hcl.Diagnostics
		if strings.HasSuffix(name, ".hcl") {
			v, diags = l.r.value(asSettingsHCL, name, fileRange(name))
		} else {
			v, diags = l.r.data(name, fileRange(name))
		}
		if v.IsNull() {
			return s, diags
		}
		c := &checker{diags: diags}
		if !c.mapping(v, name) {
			return s, c.diags
		}
		s.Data = v
		s.Workdir, _ = c.str(v, "workdir", name, false)
		s.Interval, _ = c.str(v, "interval", name, false)
		s.Publish, _ = c.str(v, "publish", name, false)
		s.PublishBranch, _ = c.str(v, "publish_branch", name, false)
		s.State, _ = c.str(v, "state", name, false)
		checkServeSettings(c, v, &s, name)
		s.AllowEmpty, _ = c.boolean(v, "allow_empty", name)
		if fg, ok := c.strList(v, "feature_groups", name, false, false); ok {
			s.FeatureGroups = fg
		}
		if sync, ok := c.str(v, "sync", name, false); ok {
			if sync != "auto" && sync != "manual" {
				c.add(withDetail(errorAt(v.Get("sync").Range, "%s: sync must be auto or manual, not %s", name, quoteShort(sync)),
					"sync: is every cluster's default sync policy; a cluster's own sync: overrides it."))
			} else {
				s.Sync = sync
			}
		}
		s.Suspend, _ = c.boolean(v, "suspend", name)
		s.Deploy = deployPolicy(c, v, name, "deploy: is every cluster's default deployment policy; a cluster's own deploy: overrides it.")
		c.misspelled(v, map[string]bool{"workdir": true, "interval": true, "publish": true, "publish_branch": true, "allow_empty": true, "state": true, "feature_groups": true, "sync": true, "suspend": true, "deploy": true}, name)
		return s, c.diags
	}
	return s, nil
}
