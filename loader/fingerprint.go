package loader

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// ErrNoFingerprint says a tree cannot be fingerprinted (a symbolic link to a
// directory, a file that cannot be read): the caller loads it as usual.
var ErrNoFingerprint = errors.New("the inputs cannot be fingerprinted")

// InputFingerprint returns a digest of everything Load may read from fsys with
// opts, without decoding anything: two trees with the same fingerprint load to
// the same repository (and the same diagnostics).
//
// It covers the path and kind of every entry of the tree (a file added, removed
// or renamed anywhere changes it: a glob or a `_path` key may name it), and the
// content of every file Load may read: fuelsync.yaml|yml|hcl, everything under
// plugins/ and clusters/, and every .yaml, .yml, .json and .hcl file elsewhere
// (what a `_path` key may name). The content of other files — a README, the
// docs, CI settings — is left out, so editing them changes nothing. Contents
// are hashed as git blob ids: a git revision (BlobHasher) gives them without
// reading the blobs, and a working tree hashes its files the same way. The
// root .git directory of a working tree is skipped, and so are the entries
// named in skip (slash paths from the root: a work directory kept inside the
// working tree, which Load never reads). A symbolic link to a directory
// returns ErrNoFingerprint.
func InputFingerprint(fsys fs.FS, opts Options, skip ...string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "fuelsync inputs 1\nmax_file_size %d\nmax_total_size %d\n", opts.MaxFileSize, opts.MaxTotalSize)
	bh, _ := fsys.(BlobHasher)
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		if slices.Contains(skip, name) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if name == ".git" {
				return fs.SkipDir
			}
			fmt.Fprintf(h, "d %s\n", strconv.Quote(name))
			return nil
		}
		kind := "f"
		if d.Type()&fs.ModeSymlink != 0 {
			kind = "l"
			target, err := readLink(fsys, name)
			if err != nil {
				return err
			}
			if fi, err := fs.Stat(fsys, name); err == nil && fi.IsDir() {
				return fmt.Errorf("%s is a symbolic link to a directory: %w", name, ErrNoFingerprint)
			}
			fmt.Fprintf(h, "l %s -> %s\n", strconv.Quote(name), strconv.Quote(target))
		} else if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file: %w", name, ErrNoFingerprint)
		}
		if !mayRead(name) {
			fmt.Fprintf(h, "%s %s\n", kind, strconv.Quote(name))
			return nil
		}
		id, err := blobID(fsys, bh, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %s %s\n", kind, strconv.Quote(name), id)
		return nil
	})
	if err != nil {
		if !errors.Is(err, ErrNoFingerprint) {
			err = fmt.Errorf("%w: %w", ErrNoFingerprint, err)
		}
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// mayRead says whether Load may read the content of the file name.
func mayRead(name string) bool {
	if strings.HasPrefix(name, "plugins/") || strings.HasPrefix(name, "clusters/") {
		return true
	}
	switch name {
	case "fuelsync.yaml", "fuelsync.yml", "fuelsync.hcl":
		return true
	}
	return dataExts[path.Ext(name)] || path.Ext(name) == ".hcl"
}

// blobID is the git blob id of the content of name (through symbolic links).
func blobID(fsys fs.FS, bh BlobHasher, name string) (string, error) {
	if bh != nil {
		if id, ok := bh.BlobHash(name); ok {
			return id, nil
		}
		return "", fmt.Errorf("%s: no blob: %w", name, ErrNoFingerprint)
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return "", err
	}
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(data))
	s.Write(data)
	return hex.EncodeToString(s.Sum(nil)), nil
}

func readLink(fsys fs.FS, name string) (string, error) {
	if rl, ok := fsys.(fs.ReadLinkFS); ok {
		return rl.ReadLink(name)
	}
	return "", fmt.Errorf("%s is a symbolic link the file system cannot read: %w", name, ErrNoFingerprint)
}
