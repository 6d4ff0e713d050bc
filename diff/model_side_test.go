package diff

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFirstApplyDecodesNothing: a first apply (nothing applied yet) or a removed
// cluster is all tasks added or removed; a side that is a render gives the task ids
// from its model, and the change set is the one decoding every file gives.
func TestFirstApplyDecodesNothing(t *testing.T) {
	rendered := renderSide(t, quickstart(t), nil, nil)
	files := map[string][]byte{}
	for name := range rendered.Digests {
		data, err := rendered.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	empty := &Side{Digests: map[string]string{}, Read: func(name string) ([]byte, error) {
		return nil, fmt.Errorf("%s: the empty side has no files", name)
	}}
	// The same render, its node files refused: nothing may decode them.
	var nodeReads atomic.Int64
	read := rendered.Read
	rendered.Read = func(name string) ([]byte, error) {
		if kind, _, _, _ := artifactPath(name); kind == "node" {
			nodeReads.Add(1)
			return nil, fmt.Errorf("%s: decoded", name)
		}
		return read(name)
	}
	for _, tc := range []struct {
		name             string
		fromModel        func() (*ChangeSet, error)
		fromFiles        func() (*ChangeSet, error)
		wantAdded, wantR bool
	}{
		{"first apply", func() (*ChangeSet, error) { return Compute(empty, rendered) },
			func() (*ChangeSet, error) { return Compute(empty, filesSide(t, files)) }, true, false},
		{"cluster removed", func() (*ChangeSet, error) { return Compute(rendered, empty) },
			func() (*ChangeSet, error) { return Compute(filesSide(t, files), empty) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodeReads.Store(0)
			got, err := tc.fromModel()
			if err != nil {
				t.Fatal(err)
			}
			if n := nodeReads.Load(); n != 0 {
				t.Errorf("%d node files decoded", n)
			}
			want, err := tc.fromFiles()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("change set from the model differs from the decoded one (-files +model):\n%s", diff)
			}
			// A new or deleted cluster's stages (master, sync) come and go with it:
			// they are no node changes of their own.
			for _, cc := range got.Clusters {
				for _, nc := range cc.Nodes {
					if nc.Pseudo {
						t.Errorf("cluster %s: stage node %s listed as a change", cc.Name, nc.Node)
					}
				}
			}
			s := got.Summary
			if tc.wantAdded && (s.TasksAdded == 0 || s.Deploy == 0) || tc.wantR && s.Delete == 0 {
				t.Errorf("summary %+v: want every node created or deleted", s)
			}
		})
	}
}

// TestRenderedSideEncodesAgain: a side made against a base does not hold the node
// files the base lacks (a first apply would hold every file of the render); read,
// they are encoded again, to the same bytes as the render's.
func TestRenderedSideEncodesAgain(t *testing.T) {
	full := renderSide(t, quickstart(t), nil, nil)
	lean := renderSide(t, quickstart(t), map[string]string{}, nil)
	if diff := cmp.Diff(full.Digests, lean.Digests); diff != "" {
		t.Fatalf("digests differ:\n%s", diff)
	}
	nodes := 0
	for name := range full.Digests {
		want, err := full.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := lean.Read(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: encoded again differently", name)
		}
		if kind, _, _, _ := artifactPath(name); kind == "node" {
			nodes++
		}
	}
	if nodes == 0 {
		t.Fatal("no node files in the render")
	}
}
