package main

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// TestImage builds the image as make image does (static binaries with a
// version, the program's layer), writes the tarball, loads it back, checks the
// user, entrypoint, working directory, volume and labels, and runs the
// fuelsync-server of the image's layer with version.
func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binaries are linux ones")
	}
	certs := "/etc/ssl/certs/ca-certificates.crt"
	if _, err := os.Stat(certs); err != nil {
		testenv.Unavailable(t, "no CA certificates at %s (apt-get install ca-certificates): %v", certs, err)
	}
	dir := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"fuelsync", "fuelsync-server"} {
		cmd := exec.Command("go", "build", "-trimpath", "-tags", "urfave_cli_no_docs",
			"-ldflags", "-X main.version=v9.8.7-test -X main.commit=0123456789abcdef",
			"-o", filepath.Join(dir, b), "./cmd/"+b)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b, err, out)
		}
	}
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	o := Options{
		Server: filepath.Join(dir, "fuelsync-server"), CLI: filepath.Join(dir, "fuelsync"), CACerts: certs,
		Version: "v9.8.7-test", Revision: "0123456789abcdef", Source: "https://github.com/fuelsync/fuelsync",
		Created: created, Arch: runtime.GOARCH,
	}
	out := filepath.Join(dir, "image.tar")
	if err := build(o, "fuelsync-server:v9.8.7-test", out); err != nil {
		t.Fatal(err)
	}

	tag, err := name.NewTag("fuelsync-server:v9.8.7-test")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("loading the image tarball: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want the non-root 65532:65532", c.User)
	}
	if diff := cmp.Diff([]string{"/usr/local/bin/fuelsync-server"}, c.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	if c.WorkingDir != "/var/lib/fuelsync" {
		t.Errorf("working directory %q", c.WorkingDir)
	}
	if _, ok := c.Volumes["/var/lib/fuelsync"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("volumes %v, want /var/lib/fuelsync", c.Volumes)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  "v9.8.7-test",
		"org.opencontainers.image.revision": "0123456789abcdef",
		"org.opencontainers.image.source":   "https://github.com/fuelsync/fuelsync",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	// The layer: extract it, and check what is in it.
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1 (no base image)", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rootfs := filepath.Join(dir, "rootfs")
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = h
		if !h.ModTime.Equal(created) {
			t.Errorf("%s: time %v, want the image's %v", h.Name, h.ModTime, created)
		}
		p := filepath.Join(rootfs, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)&0o777); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s: type %c: only files and directories expected", h.Name, h.Typeflag)
		}
	}
	for _, f := range []string{"/bin/sh", "/usr/bin/git"} {
		if files[f] != nil {
			t.Errorf("%s is in the image: none is needed", f)
		}
	}
	if h := files["/var/lib/fuelsync"]; h == nil || h.Uid != 65532 {
		t.Errorf("/var/lib/fuelsync: %+v, want a directory owned by 65532", h)
	}
	if h := files["/tmp"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v, want mode 1777", h)
	}
	passwd, err := os.ReadFile(filepath.Join(rootfs, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(passwd), "\nfuelsync:x:65532:65532:fuelsync:/var/lib/fuelsync:/sbin/nologin\n") {
		t.Errorf("/etc/passwd has no line for the user 65532:\n%s", passwd)
	}
	if b, err := os.ReadFile(filepath.Join(rootfs, "etc", "ssl", "certs", "ca-certificates.crt")); err != nil || !strings.Contains(string(b), "BEGIN CERTIFICATE") {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt: %v", err)
	}

	for _, b := range []string{"fuelsync", "fuelsync-server"} {
		bin := filepath.Join(rootfs, "usr", "local", "bin", b)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked (an interpreter): build it with CGO_ENABLED=0", b)
			}
		}
		f.Close()
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s version: %v\n%s", b, err, out)
		}
		if want := b + " v9.8.7-test\ncommit: 0123456789abcdef\n"; !strings.HasPrefix(string(out), want) {
			t.Errorf("%s version prints:\n%s\nwant it to start with:\n%s", b, out, want)
		}
	}
}

// TestLayerRefusesNoCertificates: a CA file with no certificate in it is an
// error, not an image that cannot reach any TLS server.
func TestLayerRefusesNoCertificates(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Layer(Options{Server: empty, CLI: empty, CACerts: empty})
	if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("Layer: %v, want the CA file refused", err)
	}
}
