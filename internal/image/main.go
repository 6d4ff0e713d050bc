// Command image builds the image of fuelsync-server (make image) without a
// container daemon and without pulling a base image: one layer written here,
// from scratch, with the two static binaries, /etc/passwd and /etc/group for
// the non-root user, the CA certificates of the build machine, /tmp and the
// working directory. The result is an image tarball (docker-archive layout,
// OCI media types) that `docker load`, `podman load` and `crane push` take.
//
// serve needs no git, nor any other program: fuelsync reads and fetches
// repositories with go-git, so the image has no shell and no tools.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user, its home and the working directory (a volume).
const (
	UID     = 65532
	User    = "fuelsync"
	WorkDir = "/var/lib/fuelsync"
	BinDir  = "/usr/local/bin"
)

// Options are what the image is built from.
type Options struct {
	Server, CLI string // paths of the static fuelsync-server and fuelsync binaries
	CACerts     string // the PEM bundle written as /etc/ssl/certs/ca-certificates.crt
	Version     string // org.opencontainers.image.version
	Revision    string // org.opencontainers.image.revision (the commit)
	Source      string // org.opencontainers.image.source
	Created     time.Time
	Arch        string // GOARCH of the binaries
}

func main() {
	var o Options
	var created int64
	var out, tag string
	flag.StringVar(&o.Server, "server", "", "the static fuelsync-server `BINARY` (CGO_ENABLED=0)")
	flag.StringVar(&o.CLI, "cli", "", "the static fuelsync `BINARY` (CGO_ENABLED=0)")
	flag.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA certificates' PEM `FILE` (Debian: the ca-certificates package)")
	flag.StringVar(&o.Version, "version", "dev", "the image's `VERSION` label")
	flag.StringVar(&o.Revision, "revision", "unknown", "the image's source `COMMIT` label")
	flag.StringVar(&o.Source, "source", "https://github.com/fuelsync/fuelsync", "the image's source `URL` label")
	flag.Int64Var(&created, "created", 0, "the creation time and the files' times, in `SECONDS` since 1970 (the commit's time: a reproducible image)")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the binaries' `GOARCH`")
	flag.StringVar(&tag, "tag", "fuelsync-server:dev", "the image's `NAME:TAG` in the tarball")
	flag.StringVar(&out, "o", "", "write the image tarball to `FILE`")
	flag.Parse()
	o.Created = time.Unix(created, 0).UTC()
	if err := build(o, tag, out); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func build(o Options, tag, out string) error {
	if o.Server == "" || o.CLI == "" || out == "" {
		return errors.New("-server, -cli and -o are required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %s: %v", tag, err)
	}
	img, err := Build(o)
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image %s (%s) written to %s\n", ref, d, out)
	return nil
}

// Build returns the image.
func Build(o Options) (v1.Image, error) {
	layer, err := Layer(o)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   l,
		History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "fuelsync internal/image (make image)", Comment: "fuelsync-server, fuelsync, /etc/passwd, CA certificates"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = o.Arch, "linux", v1.Time{Time: o.Created}
	cf.Config = v1.Config{
		User:       strconv.Itoa(UID) + ":" + strconv.Itoa(UID),
		Entrypoint: []string{BinDir + "/fuelsync-server"},
		Cmd:        []string{"--help"},
		WorkingDir: WorkDir,
		Volumes:    map[string]struct{}{WorkDir: {}},
		Env:        []string{"PATH=" + BinDir, "HOME=" + WorkDir},
		ExposedPorts: map[string]struct{}{
			"8080/tcp": {},
		},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "fuelsync-server",
			"org.opencontainers.image.description": "GitOps reconciler for OpenStack Fuel deployment configuration: fuelsync with serve and the state on etcd",
			"org.opencontainers.image.version":     o.Version,
			"org.opencontainers.image.revision":    o.Revision,
			"org.opencontainers.image.source":      o.Source,
			"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
		},
	}
	return mutate.ConfigFile(img, cf)
}

// entry is one file or directory of the layer.
type entry struct {
	name string
	mode int64
	uid  int
	dir  bool
	data []byte
	file string // read data from this file
}

// Layer returns the uncompressed tar of the image's only layer.
func Layer(o Options) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%[1]s:x:%[2]d:%[2]d:fuelsync:%[3]s:/sbin/nologin\n", User, UID, WorkDir)
	group := fmt.Sprintf("root:x:0:\n%[1]s:x:%[2]d:\n", User, UID)
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, file: o.CACerts},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
		{name: "usr/local/bin/fuelsync", mode: 0o755, file: o.CLI},
		{name: "usr/local/bin/fuelsync-server", mode: 0o755, file: o.Server},
		{name: "var/", mode: 0o755, dir: true},
		{name: "var/lib/", mode: 0o755, dir: true},
		{name: "var/lib/fuelsync/", mode: 0o700, dir: true, uid: UID},
	}
	if !slices.IsSortedFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) }) {
		return nil, errors.New("the layer's entries are not sorted")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: o.Created, Format: tar.FormatPAX}
		if e.uid != 0 {
			h.Uname, h.Gname = User, User
		} else {
			h.Uname, h.Gname = "root", "root"
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		data := e.data
		if e.file != "" {
			b, err := os.ReadFile(e.file)
			if err != nil {
				return nil, fmt.Errorf("%s of the image: %v", "/"+e.name, err)
			}
			data = b
		}
		if path.Base(e.name) == "ca-certificates.crt" && !bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----")) {
			return nil, fmt.Errorf("%s: no PEM certificate in it", e.file)
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
