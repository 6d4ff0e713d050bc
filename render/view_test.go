package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fuelsync/fuelsync/loader"
)

// storedSet renders the quickstart example, with edits (file → old → new,
// old "" appends), in the stored layout: its files and their digests.
func storedSet(t *testing.T, edits map[string][2]string) (fstest.MapFS, map[string]string) {
	t.Helper()
	src := os.DirFS("../examples/quickstart")
	fsys := fstest.MapFS{}
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(src, p)
		fsys[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, e := range edits {
		old := string(fsys[file].Data)
		updated := old + e[1]
		if e[0] != "" {
			updated = strings.Replace(old, e[0], e[1], 1)
		}
		if updated == old {
			t.Fatalf("the edit of %s changes nothing", file)
		}
		fsys[file].Data = []byte(updated)
	}
	repo, ld := loader.Load(fsys, loader.Options{})
	files, err := Files(loadRender(t, repo, ld), "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	set, digests := fstest.MapFS{}, map[string]string{}
	for name, data := range files {
		set[name] = &fstest.MapFile{Data: data}
		sum := sha256.Sum256(data)
		digests[name] = hex.EncodeToString(sum[:])
	}
	return set, digests
}

// TestGraphDigestFollowsOwnGraph: for every commit below and every node, a
// node's GraphDigest changes exactly when its expanded view changes (the
// sync node's is its ViewDigest), whatever the commit did to the cluster's
// task catalogue (a setting changes cluster.yaml, no graph).
func TestGraphDigestFollowsOwnGraph(t *testing.T) {
	const monitoring = "plugins/monitoring/deployment_tasks.yaml"
	base, baseDigests := storedSet(t, nil)
	for name, edits := range map[string]map[string][2]string{
		"a task for monitor nodes only": {monitoring: {"", "\n- {id: probe, type: shell, version: 2.1.0, roles: [monitor], requires: [monitoring-dashboard], required_for: [deploy_end], parameters: {cmd: /bin/true, timeout: 60}}\n"}},
		"a monitor task's parameters":   {monitoring: {"timeout: 600", "timeout: 900"}},
		"a tag on node-2":               {"clusters/demo.yaml": {"tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}"}},
		"a setting":                     {"clusters/demo.yaml": {"common.debug.value: true", "common.debug.value: false"}},
	} {
		t.Run(name, func(t *testing.T) {
			set, digests := storedSet(t, edits)
			changed := 0
			for file := range digests {
				parts := strings.Split(file, "/")
				if len(parts) != 4 || parts[1] != "nodes" || baseDigests[file] == "" {
					continue
				}
				before, err := GraphDigest(base, baseDigests, file)
				if err != nil {
					t.Fatal(err)
				}
				after, err := GraphDigest(set, digests, file)
				if err != nil {
					t.Fatal(err)
				}
				graph := strings.TrimSuffix(parts[3], ".yaml")
				v1, err := ExpandNode(base, parts[0], parts[2], graph)
				if err != nil {
					t.Fatal(err)
				}
				v2, err := ExpandNode(set, parts[0], parts[2], graph)
				if err != nil {
					t.Fatal(err)
				}
				if parts[2] == SyncNode {
					if view, _ := ViewDigest(digests, file); after != view {
						t.Errorf("%s: GraphDigest %s, want its ViewDigest %s", file, after, view)
					}
					continue
				}
				if (before != after) != (string(v1) != string(v2)) {
					t.Errorf("%s: view changed %v, GraphDigest changed %v", file, string(v1) != string(v2), before != after)
				}
				if before != after {
					changed++
				}
			}
			if (changed == 0) != (name == "a setting") {
				t.Errorf("the commit changed %d nodes' graphs", changed)
			}
		})
	}
}

// TestGraphDigestErrors: a file missing or not matching its digest is an
// error; a node file of the expanded layout is its own digest.
func TestGraphDigestErrors(t *testing.T) {
	set, digests := storedSet(t, nil)
	const name = "demo/nodes/node-2/default.yaml"
	if _, err := GraphDigest(set, digests, "demo/nodes/node-9/default.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an unknown node: %v, want fs.ErrNotExist", err)
	}
	tampered := fstest.MapFS{}
	for k, v := range set {
		tampered[k] = v
	}
	other := map[string]string{}
	for k, v := range digests {
		other[k] = v
	}
	other[name] = strings.Repeat("0", 64) // a digest no cache holds
	if _, err := GraphDigest(tampered, other, name); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("a node file not matching its digest: %v", err)
	}
	delete(other, CataloguePath("demo", "default"))
	if d, err := GraphDigest(tampered, other, name); err != nil || d != other[name] {
		t.Errorf("without a catalogue (format 1): %q, %v; want the file's digest", d, err)
	}
}
