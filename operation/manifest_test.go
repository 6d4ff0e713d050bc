//go:build fuelsync_testhooks

package operation

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestApplyEncodesManifestOnce: an apply encodes the manifest of its set
// once, when it plans (a fleet's is megabytes: 5.9 MB at 20,000 nodes); its
// publish uses those bytes, checked against the plan's digest, rather than
// encoding it again. A plan applied later (saved, or asked about first)
// holds no bytes, and its publish encodes it. The published manifest is the
// same either way.
func TestApplyEncodesManifestOnce(t *testing.T) {
	calls := 0
	failpoint.Enable(failpoint.OperationManifest, func(...string) error { calls++; return nil })
	t.Cleanup(func() { failpoint.Disable(failpoint.OperationManifest) })
	ctx := context.Background()
	w := state.Open(filepath.Join(t.TempDir(), "wd"))
	op := &Operation{Workdir: w, ToolVersion: "test"}
	req := Request{Revision: source.Revision{SHA: source.WorkingTree, FS: os.DirFS("../examples/quickstart")}, Apply: true}
	res, err := op.Apply(ctx, req)
	if err != nil || res.Outcome != Applied {
		t.Fatalf("apply: %v, %v", res.Outcome, err)
	}
	if calls != 1 {
		t.Errorf("the apply encoded the manifest %d times, want once", calls)
	}
	got, err := os.ReadFile(filepath.Join(w.CurrentDir(), "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := render.Manifest(res.Plan.Artifacts, res.Plan.SetRev(), res.Plan.ToolVersion)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("the published manifest differs from the plan's encoding:\n%s\nwant:\n%s", got, want)
	}
	if res.manifest != nil {
		t.Errorf("the applied result still holds its manifest's %d bytes", len(res.manifest))
	}
}
