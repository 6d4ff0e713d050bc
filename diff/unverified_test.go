package diff

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestChangeSetUnreadableOldSide: when the applied files cannot be read (an
// applied set lost with its revision), a cluster is compared by its digests: a
// node whose files differ is planned as changed (cause "unverified"), a node on
// one side only created or deleted, a node whose files are the same left out.
func TestChangeSetUnreadableOldSide(t *testing.T) {
	fsys := quickstart(t)
	applied := renderSide(t, fsys, nil, nil)
	old := &Side{Digests: maps.Clone(applied.Digests), Unreadable: true,
		Read: func(name string) ([]byte, error) { return nil, errors.New("the applied set is gone: " + name) }}
	// node-9 was applied and is gone; node-6 was not applied yet.
	old.Digests["demo/nodes/node-9/default.yaml"] = strings.Repeat("9", 64)
	for name := range old.Digests {
		if strings.HasPrefix(name, "demo/nodes/node-6/") {
			delete(old.Digests, name)
		}
	}
	// node-2's tag changes at the head.
	head := renderSide(t, edit(t, fsys, "clusters/demo.yaml", "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}"), old.Digests, nil)
	cs, err := Compute(old, head)
	if err != nil {
		t.Fatal(err)
	}
	got := lines(cs)
	want := []string{
		"~ node-2 [controller] run=[default] | unverified the applied files cannot be read: planned as changed",
		"+ node-6 [monitor] run=[provision default] | unverified the applied files cannot be read: planned as changed",
		"- node-9 [] run=[deletion] | unverified the applied files cannot be read: planned as changed",
		"summary deploy=2 provision=1 delete=1 tasks +0 -0 ~0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("change set (-want +got):\n%s", diff)
	}
}
