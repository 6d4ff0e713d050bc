package state

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMarkerContent: a directory is fuelsync's by its marker's content, not
// its name: a marker file of another text does not make a directory with
// files fuelsync does not make there a work directory.
func TestMarkerContent(t *testing.T) {
	first, _, _ := strings.Cut(markerText, "\n")
	for _, tc := range []struct {
		name   string
		marker func(path string) error
		ours   bool
	}{
		{"as fuelsync writes it", func(p string) error { return os.WriteFile(p, []byte(markerText), 0o644) }, true},
		{"its first line", func(p string) error { return os.WriteFile(p, []byte(first+"\n"), 0o644) }, true},
		{"another format", func(p string) error { return os.WriteFile(p, []byte("fuelsync work directory, format 2\n"), 0o644) }, false},
		{"the first line without its end", func(p string) error { return os.WriteFile(p, []byte(first), 0o644) }, false},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }, false},
		{"too large", func(p string) error { return os.WriteFile(p, []byte(markerText+strings.Repeat("x", 5000)), 0o644) }, false},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }, false},
		{"a link to the marker", func(p string) error {
			real := filepath.Join(filepath.Dir(filepath.Dir(p)), "real")
			if err := os.WriteFile(real, []byte(markerText), 0o644); err != nil {
				return err
			}
			return os.Symlink(real, p)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "wd")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tc.marker(filepath.Join(dir, MarkerName)); err != nil {
				t.Fatal(err)
			}
			err := Open(dir).CheckUsable()
			var nw *NotWorkdirError
			switch {
			case tc.ours && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.ours && !errors.As(err, &nw):
				t.Errorf("taken as a work directory: %v", err)
			}
		})
	}
}

// TestStatusOf: a cluster's recorded status; an older state, which recorded
// none, applied it: synced. No record: "".
func TestStatusOf(t *testing.T) {
	for _, tc := range []struct {
		cs   *ClusterState
		want string
	}{
		{nil, ""},
		{&ClusterState{}, StatusSynced},
		{&ClusterState{Status: StatusHeld}, StatusHeld},
		{&ClusterState{Status: StatusOutOfSync}, StatusOutOfSync},
	} {
		if got := tc.cs.StatusOf(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.cs, got, tc.want)
		}
	}
}
