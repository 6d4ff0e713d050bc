package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// entry is what the test reads of a tar entry.
type entry struct {
	Name     string
	Mode     int64
	Uid, Gid int
	ModTime  time.Time
	Data     string
	IsDir    bool
	Uname    string
}

// TestWrite packs two platforms: each archive holds one directory named as
// it is, with the three binaries (.exe on windows, mode 0755), README.md
// (0644), all owned by root and dated at -created; SHA256SUMS lists the
// archives' sha256 as sha256sum does; a second run writes the same bytes.
func TestWrite(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bins := t.TempDir()
	for _, p := range []struct{ dir, ext string }{{"linux-amd64", ""}, {"windows-amd64", ".exe"}} {
		if err := os.Mkdir(filepath.Join(bins, p.dir), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, b := range Binaries {
			if err := os.WriteFile(filepath.Join(bins, p.dir, b+p.ext), []byte(b+" for "+p.dir), 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	readme := filepath.Join(bins, "README.md")
	if err := os.WriteFile(readme, []byte("# fuelsync\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dirs := []string{filepath.Join(bins, "windows-amd64"), filepath.Join(bins, "linux-amd64")}
	out := filepath.Join(t.TempDir(), "dist")
	names, err := Write(out, "v1.2.3", readme, created, dirs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fuelsync-v1.2.3-linux-amd64.tar.gz", "fuelsync-v1.2.3-windows-amd64.tar.gz"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("archives (-want +got):\n%s", diff)
	}
	var sums strings.Builder
	for _, n := range want {
		data, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		sums.WriteString(hex.EncodeToString(sum[:]) + "  " + n + "\n")
		platform := strings.TrimSuffix(strings.TrimPrefix(n, "fuelsync-v1.2.3-"), ".tar.gz")
		ext := ""
		if strings.HasPrefix(platform, "windows") {
			ext = ".exe"
		}
		top := strings.TrimSuffix(n, ".tar.gz")
		wantEntries := []entry{
			{Name: top + "/", Mode: 0o755, ModTime: created, IsDir: true, Uname: "root"},
			{Name: top + "/fuelsync" + ext, Mode: 0o755, ModTime: created, Data: "fuelsync for " + platform, Uname: "root"},
			{Name: top + "/fuelsync-server" + ext, Mode: 0o755, ModTime: created, Data: "fuelsync-server for " + platform, Uname: "root"},
			{Name: top + "/fuelsync-agent" + ext, Mode: 0o755, ModTime: created, Data: "fuelsync-agent for " + platform, Uname: "root"},
			{Name: top + "/README.md", Mode: 0o644, ModTime: created, Data: "# fuelsync\n", Uname: "root"},
		}
		if diff := cmp.Diff(wantEntries, readArchive(t, data)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", n, diff)
		}
	}
	got, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != sums.String() {
		t.Errorf("SHA256SUMS:\n%s\nwant:\n%s", got, sums.String())
	}

	again := filepath.Join(t.TempDir(), "dist")
	if _, err := Write(again, "v1.2.3", readme, created, dirs); err != nil {
		t.Fatal(err)
	}
	for _, n := range append(want, "SHA256SUMS") {
		a, _ := os.ReadFile(filepath.Join(out, n))
		b, _ := os.ReadFile(filepath.Join(again, n))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", n)
		}
	}
}

// TestWriteRefuses: a version or a directory name that would make a bad file
// name, a missing binary, nothing to pack.
func TestWriteRefuses(t *testing.T) {
	bins := t.TempDir()
	readme := filepath.Join(bins, "README.md")
	os.WriteFile(readme, []byte("x"), 0o644)
	os.Mkdir(filepath.Join(bins, "linux-amd64"), 0o755)
	os.WriteFile(filepath.Join(bins, "linux-amd64", "fuelsync"), []byte("x"), 0o755)
	for _, tc := range []struct {
		version string
		dirs    []string
		want    string
	}{
		{"../v1", []string{filepath.Join(bins, "linux-amd64")}, "want a version"},
		{"v1", nil, "no OS-ARCH directory"},
		{"v1", []string{bins}, "want a directory named OS-ARCH"},
		{"v1", []string{filepath.Join(bins, "linux-amd64")}, "fuelsync-server: no such file"},
	} {
		_, err := Write(filepath.Join(t.TempDir(), "dist"), tc.version, readme, time.Unix(0, 0), tc.dirs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Write(%q, %q): %v, want %q", tc.version, tc.dirs, err, tc.want)
		}
	}
}

func readArchive(t *testing.T, data []byte) []entry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Errorf("gzip header: name %q, time %v; want neither", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	var out []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{Name: h.Name, Mode: h.Mode, Uid: h.Uid, Gid: h.Gid, ModTime: h.ModTime.UTC(), Data: string(body),
			IsDir: h.Typeflag == tar.TypeDir, Uname: h.Uname})
	}
}
