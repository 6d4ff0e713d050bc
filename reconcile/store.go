package reconcile

// The work directory (SPEC §7):
//
//	<workdir>/lock                     flock(2)ed by a writer; its holder as JSON
//	<workdir>/state.json               symlink → artifacts/current/.state.json
//	<workdir>/artifacts/<serial>/      an applied set (SPEC §6 layout) + .state.json
//	<workdir>/artifacts/current        symlink → <serial>
//
// The state and the artifacts it describes must switch together: with two files
// renamed one after the other, a crash between the renames would leave a state
// that does not describe the current set. So the state lives inside its set, and
// state.json reaches it through current: a new set (files and state) is written
// and fsynced under a temporary name, renamed to its serial, and the rename of a
// new symlink over current is the single atomic commit point. A crash before it
// leaves the previous set and state; after it, the new ones. The last 5 sets are
// kept; leftovers of crashed runs are removed by the next publish.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Keep is how many applied sets the work directory keeps.
const Keep = 5

// State is <workdir>/state.json.
type State struct {
	FormatVersion string `json:"format_version"`
	// Lineage is made at the first apply and kept: a plan made against another
	// work directory's state is refused.
	Lineage string `json:"lineage"`
	// Serial counts applies; 0 is nothing applied yet.
	Serial int64 `json:"serial"`
	// Revision is the applied source revision (a commit sha, or "working-tree").
	Revision    string                   `json:"revision"`
	ToolVersion string                   `json:"tool_version"`
	Clusters    map[string]*ClusterState `json:"clusters"`
	// Artifacts are the applied files (path → sha256), manifest.json included.
	Artifacts map[string]string `json:"artifacts"`
}

// ClusterState is what the state records of a cluster.
type ClusterState struct {
	// Nodes are the deployed nodes with their roles (Fuel's deployed_roles).
	Nodes map[string]NodeState `json:"nodes"`
	// Primary maps each tag with a primary to the node holding it.
	Primary map[string]string `json:"primary"`
}

// NodeState is a deployed node.
type NodeState struct {
	ID    int      `json:"id"`
	Roles []string `json:"roles"`
}

// Primary implements render.AppliedState: the node primary for tag.
func (st *State) Primary(cluster, tag string) (string, bool) {
	if st == nil || st.Clusters[cluster] == nil {
		return "", false
	}
	n, ok := st.Clusters[cluster].Primary[tag]
	return n, ok
}

// Deployed implements render.AppliedState.
func (st *State) Deployed(cluster, node string) bool {
	if st == nil || st.Clusters[cluster] == nil {
		return false
	}
	_, ok := st.Clusters[cluster].Nodes[node]
	return ok
}

func emptyState() *State {
	return &State{FormatVersion: "1", Clusters: map[string]*ClusterState{}, Artifacts: map[string]string{}}
}

func newLineage() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Workdir is a work directory.
type Workdir struct{ Dir string }

// Open returns the work directory dir (created by the first lock).
func Open(dir string) *Workdir { return &Workdir{Dir: dir} }

func (w *Workdir) artifacts() string { return filepath.Join(w.Dir, "artifacts") }

// CurrentDir is the current applied set.
func (w *Workdir) CurrentDir() string { return filepath.Join(w.artifacts(), "current") }

// SetDir is the applied set of serial n.
func (w *Workdir) SetDir(n int64) string {
	return filepath.Join(w.artifacts(), strconv.FormatInt(n, 10))
}

// ReadState returns the applied state, an empty one when nothing was applied.
func (w *Workdir) ReadState() (*State, error) {
	name := filepath.Join(w.Dir, "state.json")
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		if _, cerr := os.Lstat(w.CurrentDir()); errors.Is(cerr, fs.ErrNotExist) {
			return emptyState(), nil
		}
		return nil, fmt.Errorf("%s: the applied set it points to is missing: %w", name, err)
	}
	if err != nil {
		return nil, err
	}
	st := emptyState()
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%s does not parse: %w", name, err)
	}
	if st.FormatVersion != "1" {
		return nil, fmt.Errorf("%s has format_version %q; this fuelsync reads 1", name, st.FormatVersion)
	}
	return st, nil
}

// Publish writes a new applied set with state st (its serial the current one + 1)
// and switches to both at once. write is called once; its put may be called from
// several goroutines and copies data before returning. The caller holds lock l.
func (w *Workdir) Publish(l *Lock, st *State, write func(put func(name string, data []byte) error) error) error {
	if l == nil || l.w != w {
		return errors.New("publishing needs the work directory's lock")
	}
	cur, err := w.ReadState()
	if err != nil {
		return err
	}
	if st.Serial != cur.Serial+1 {
		return fmt.Errorf("publishing serial %d over serial %d: serials must follow each other", st.Serial, cur.Serial)
	}
	if st.Lineage == "" {
		st.Lineage = newLineage()
	}
	if err := os.MkdirAll(w.artifacts(), 0o755); err != nil {
		return err
	}
	w.clean(cur.Serial)
	tmp, err := os.MkdirTemp(w.artifacts(), ".tmp-"+strconv.FormatInt(st.Serial, 10)+"-")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := writeSet(tmp, st, write); err != nil {
		return err
	}
	final := w.SetDir(st.Serial)
	if err := os.RemoveAll(final); err != nil { // a set of a crashed run, never current
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	ok = true
	// The commit point: current → the new set.
	if err := replaceSymlink(w.artifacts(), "current", strconv.FormatInt(st.Serial, 10)); err != nil {
		return err
	}
	if err := replaceSymlink(w.Dir, "state.json", filepath.Join("artifacts", "current", ".state.json")); err != nil {
		return err
	}
	w.prune(st.Serial)
	return nil
}

// writeSet writes the files and the state into dir and syncs them all.
func writeSet(dir string, st *State, write func(put func(name string, data []byte) error) error) error {
	var mu sync.Mutex
	dirs := map[string]bool{dir: true}
	put := func(name string, data []byte) error {
		clean := path.Clean(name)
		if name == "" || path.IsAbs(name) || clean != name || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(name, ".") {
			return fmt.Errorf("artifact name %q is not a clean relative path", name)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		parent := filepath.Dir(p)
		mu.Lock()
		made := dirs[parent]
		mu.Unlock()
		if !made {
			if err := os.MkdirAll(parent, 0o755); err != nil {
				return err
			}
			mu.Lock()
			for d := parent; d != dir && !dirs[d]; d = filepath.Dir(d) {
				dirs[d] = true
			}
			mu.Unlock()
		}
		return writeSynced(p, data)
	}
	if err := write(put); err != nil {
		return err
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(dir, ".state.json"), append(data, '\n')); err != nil {
		return err
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func writeSynced(name string, data []byte) error { return writeSyncedMode(name, data, 0o644) }

func writeSyncedMode(name string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}

// replaceSymlink points dir/name at target, atomically (a new link renamed over).
func replaceSymlink(dir, name, target string) error {
	if cur, err := os.Readlink(filepath.Join(dir, name)); err == nil && cur == target {
		return nil
	}
	tmp := filepath.Join(dir, ".link-"+name+"-"+newLineage()[:8])
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// WriteFileAtomic writes name through a synced temporary file renamed over it,
// keeping the mode of the file it replaces (0644 for a new one): a crash leaves
// the old content or the new, never a part.
func WriteFileAtomic(name string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(name); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp-"+newLineage()[:8])
	if err := writeSyncedMode(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(name))
}

// Tidy removes what crashed runs left behind (temporary sets, sets never switched
// to) and the sets beyond the Keep newest. The caller holds lock l.
func (w *Workdir) Tidy(l *Lock) error {
	if l == nil || l.w != w {
		return errors.New("tidying needs the work directory's lock")
	}
	st, err := w.ReadState()
	if err != nil {
		return err
	}
	w.clean(st.Serial)
	w.prune(st.Serial)
	return nil
}

// sets lists the serials of the applied sets on disk, ascending.
func (w *Workdir) sets() []int64 {
	entries, _ := os.ReadDir(w.artifacts())
	var out []int64
	for _, e := range entries {
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && e.IsDir() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// clean removes what crashed runs left: temporary sets and links, and sets newer
// than the current one (written, never switched to).
func (w *Workdir) clean(current int64) {
	entries, _ := os.ReadDir(w.artifacts())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") || strings.HasPrefix(e.Name(), ".link-") {
			os.RemoveAll(filepath.Join(w.artifacts(), e.Name()))
		}
	}
	for _, n := range w.sets() {
		if n > current {
			os.RemoveAll(w.SetDir(n))
		}
	}
}

// prune keeps the Keep newest sets.
func (w *Workdir) prune(current int64) {
	sets := w.sets()
	for i, n := range sets {
		if i < len(sets)-Keep && n != current {
			os.RemoveAll(w.SetDir(n))
		}
	}
}
