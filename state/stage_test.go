//go:build linux

package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sumOf(data string) string {
	s := sha256.Sum256([]byte(data))
	return hex.EncodeToString(s[:])
}

// TestPublishStaged: files staged while planning are linked into the set by
// their digest (a plain file and a node directory's file alike), next to files
// put as Publish puts them; a digest the stage did not make is refused; Discard
// keeps the objects a set links and removes those of a stage never published.
func TestPublishStaged(t *testing.T) {
	w := Open(filepath.Join(t.TempDir(), "wd"))
	if _, err := w.NewStage(nil); err == nil {
		t.Error("staging without the lock")
	}
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	s, err := w.NewStage(l)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"c/cluster.yaml": "cluster", "c/nodes/node-1/tasks.yaml": "tasks of node-1", "c/unused.yaml": "never linked"}
	for name, data := range files {
		sum, err := s.Put([]byte(data))
		if err != nil || sum != sumOf(data) {
			t.Fatalf("Put(%s) = %s, %v; want %s", name, sum, err, sumOf(data))
		}
	}
	st := Empty()
	st.Serial = 1
	st.Artifacts = map[string]string{"c/cluster.yaml": sumOf("cluster"), "c/nodes/node-1/tasks.yaml": sumOf("tasks of node-1"), "manifest.json": sumOf("{}")}
	err = w.PublishStaged(l, st, s, func(put func(string, []byte) error, link func(name, sum string) error) error {
		if err := link("c/other.yaml", sumOf("not staged")); err == nil || !strings.Contains(err.Error(), "was staged") {
			t.Errorf("linking an object not staged: %v", err)
		}
		for _, name := range []string{"c/cluster.yaml", "c/nodes/node-1/tasks.yaml"} {
			if err := link(name, sumOf(files[name])); err != nil {
				return err
			}
		}
		return put("manifest.json", []byte("{}"))
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"c/cluster.yaml": "cluster", "c/nodes/node-1/tasks.yaml": "tasks of node-1", "manifest.json": "{}"} {
		data, err := os.ReadFile(filepath.Join(w.CurrentDir(), filepath.FromSlash(name)))
		if err != nil || string(data) != want {
			t.Errorf("current/%s = %q, %v; want %q", name, data, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(w.CurrentDir(), "c", "other.yaml")); !os.IsNotExist(err) {
		t.Errorf("c/other.yaml, refused, is in the set: %v", err)
	}
	s.Discard()
	if _, err := os.Stat(w.objectPath(sumOf("never linked"))); !os.IsNotExist(err) {
		t.Errorf("the staged object no set links is left after Discard: %v", err)
	}
	for _, data := range []string{"cluster", "tasks of node-1"} {
		if _, err := os.Stat(w.objectPath(sumOf(data))); err != nil {
			t.Errorf("the object of %q, linked by the set, is gone after Discard: %v", data, err)
		}
	}

	// An apply that stages and never publishes (cancelled, failed): Discard
	// removes what it wrote.
	s3, err := w.NewStage(l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Put([]byte("cancelled")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.objectPath(sumOf("cancelled"))); err != nil {
		t.Fatalf("the staged object is not in the store: %v", err)
	}
	s3.Discard()
	if _, err := os.Stat(w.objectPath(sumOf("cancelled"))); !os.IsNotExist(err) {
		t.Errorf("the staged object of an apply that did not publish is left after Discard: %v", err)
	}

	// Another lock's stage is refused.
	other := Open(filepath.Join(t.TempDir(), "wd2"))
	l2, err := other.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Unlock()
	s2, err := other.NewStage(l2)
	if err != nil {
		t.Fatal(err)
	}
	st2 := Empty()
	st2.Serial = 2
	if err := w.PublishStaged(l, st2, s2, func(func(string, []byte) error, func(string, string) error) error { return nil }); err == nil {
		t.Error("publishing with the stage of another work directory")
	}
}
