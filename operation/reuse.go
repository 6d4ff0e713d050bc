package operation

import (
	"io/fs"
	"os"
	"slices"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
)

// Reuse decides which clusters of repo, loaded from fsys with opts (skip as
// for loader.InputFingerprint), keep their applied artifacts instead of being
// rendered: those whose inputs are the applied state's (State.Reusable), when
// the applied set is in the work directory. It returns them, and the
// clusters' fingerprints for the plan to record (nil when the tree cannot be
// fingerprinted). A caller renders every cluster of repo but kept.
func Reuse(w *state.Workdir, st *state.State, fsys fs.FS, repo *loader.Repo, opts loader.Options, toolVersion string, skip ...string) (kept []string, files map[string]string) {
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
