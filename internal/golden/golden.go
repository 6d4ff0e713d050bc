// Package golden compares test output with golden files, and rewrites them when
// FUELSYNC_UPDATE is set (FUELSYNC_UPDATE=1 go test ./... or make golden).
package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Update reports whether golden files should be rewritten.
func Update() bool { return os.Getenv("FUELSYNC_UPDATE") != "" }

// Check compares got with the file at path, or writes it when updating.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (run with FUELSYNC_UPDATE=1 to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
