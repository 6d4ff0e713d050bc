// Package release packs the binaries make release cross-compiled into the
// release archives and their checksums (go run ./internal/release/pack).
//
// Each DIR argument is named OS-ARCH and holds fuelsync, fuelsync-server and
// fuelsync-agent (with .exe on windows). For each, DIST gets fuelsync-VERSION-OS-ARCH.tar.gz:
// one directory of that name holding the three binaries (mode 0755) and the
// README.md of the working directory (0644), every entry owned by 0:0 and
// dated at -created (the commit's time), gzip without a name or a time, so
// that one commit gives the same bytes. DIST/SHA256SUMS lists each archive's
// sha256 as sha256sum prints it (`sha256sum -c SHA256SUMS` checks them).
package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Binaries are the files every archive holds besides README.md.
var Binaries = []string{"fuelsync", "fuelsync-server", "fuelsync-agent"}

// platformName is a DIR's name: OS-ARCH as GOOS and GOARCH spell them.
var platformName = regexp.MustCompile(`^[a-z0-9]+-[a-z0-9]+$`)

// versionName is what -version may be: it becomes part of file names.
var versionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]*$`)

// Write packs each of dirs into out (made when missing) and writes
// out/SHA256SUMS; it returns the archives' names, sorted.
func Write(out, version, readme string, created time.Time, dirs []string) ([]string, error) {
	if !versionName.MatchString(version) {
		return nil, fmt.Errorf("-version %q: want a version such as v1.2.3 (letters, digits, . + _ -)", version)
	}
	if len(dirs) == 0 {
		return nil, errors.New("no OS-ARCH directory of binaries given")
	}
	doc, err := os.ReadFile(readme)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var names []string
	sums := map[string]string{}
	for _, dir := range dirs {
		platform := filepath.Base(dir)
		if !platformName.MatchString(platform) {
			return nil, fmt.Errorf("%s: want a directory named OS-ARCH (linux-amd64)", dir)
		}
		name := "fuelsync-" + version + "-" + platform
		data, err := archive(dir, name, strings.HasPrefix(platform, "windows-"), doc, created)
		if err != nil {
			return nil, err
		}
		file := name + ".tar.gz"
		if err := writeFile(filepath.Join(out, file), data); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		names, sums[file] = append(names, file), hex.EncodeToString(sum[:])
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(sums[n] + "  " + n + "\n") // sha256sum's text mode
	}
	return names, writeFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()))
}

// archive is the tar.gz of the binaries of dir and README.md, under name/.
func archive(dir, name string, windows bool, readme []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	put := func(file string, mode int64, data []byte) error {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name + "/" + file, Mode: mode, Size: int64(len(data)),
			ModTime: created, Uname: "root", Gname: "root", Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: created,
		Uname: "root", Gname: "root", Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	for _, b := range Binaries {
		if windows {
			b += ".exe"
		}
		data, err := os.ReadFile(filepath.Join(dir, b))
		if err != nil {
			return nil, err
		}
		if err := put(b, 0o755, data); err != nil {
			return nil, err
		}
	}
	if err := put("README.md", 0o644, readme); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeFile writes data to path through a temporary file renamed over it.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
