package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/loader"
)

// ClusterInputsKey is the input fingerprint of one cluster's render: the
// cluster's fingerprint (loader.ClusterFingerprints), the tool version, and
// what the render reads of the applied state for it (its deployed nodes and
// primary tags, cs; nil when none). Apply records it with the state it writes,
// as InputsKey.
func ClusterInputsKey(files, toolVersion string, cs *ClusterState) string {
	h := sha256.New()
	fmt.Fprintf(h, "fuelsync cluster render inputs 1\nfiles %s\ntool %s\n", files, toolVersion)
	if cs != nil {
		// What the render reads of it (as the state wrote it before clusters
		// had statuses: the same bytes, so older states' keys still match).
		b, _ := json.Marshal(renderInputs{Nodes: cs.Nodes, Primary: cs.Primary}) // map keys sorted: deterministic
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Reusable returns, sorted, the clusters whose applied artifacts are already
// the render of inputs whose cluster fingerprints are files
// (loader.ClusterFingerprints of a revision) by the tool version toolVersion:
// they need not be rendered again. None when nothing is applied, or the state
// has no cluster fingerprints (written by an older version).
func (st *State) Reusable(files map[string]string, toolVersion string) []string {
	if st == nil || st.Serial == 0 || len(st.ClusterInputs) == 0 {
		return nil
	}
	var out []string
	for c, f := range files {
		want := st.ClusterInputs[c]
		if f == "" || want == "" || st.Artifacts[c+"/cluster.yaml"] == "" {
			continue
		}
		if ClusterInputsKey(f, toolVersion, st.Clusters[c]) == want {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// Reuse decides which clusters of repo, loaded from fsys with opts (skip as
// for loader.InputFingerprint), keep their applied artifacts instead of being
// rendered: those whose inputs are the applied state's (State.Reusable), when
// the applied set is in the work directory. It returns them, and the
// clusters' fingerprints for the plan to record (nil when the tree cannot be
// fingerprinted). A caller renders every cluster of repo but kept.
func Reuse(w *Workdir, st *State, fsys fs.FS, repo *loader.Repo, opts loader.Options, toolVersion string, skip ...string) (kept []string, files map[string]string) {
	files, err := loader.ClusterFingerprints(fsys, opts, repo, skip...)
	if err != nil {
		return nil, nil
	}
	kept = st.Reusable(files, toolVersion)
	if len(kept) > 0 {
		if _, err := os.Stat(w.SetDir(st.Serial)); err != nil {
			kept = nil
		}
	}
	return kept, files
}

// RenderList is the list of clusters of repo to render when kept are not:
// nil (every cluster) when kept is empty.
func RenderList(repo *loader.Repo, kept []string) []string {
	if len(kept) == 0 {
		return nil
	}
	out := []string{}
	for _, c := range repo.Clusters {
		if !slices.Contains(kept, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// clusterOf is the cluster an artifact path belongs to ("" for manifest.json).
func clusterOf(name string) string {
	c, _, ok := strings.Cut(name, "/")
	if !ok {
		return ""
	}
	return c
}
