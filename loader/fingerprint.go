package loader

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
	entries, err := inputEntries(fsys, skip)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	writeInputsHeader(h, opts)
	for _, e := range entries {
		e.write(h)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ClusterFingerprints returns, for each cluster of repo (loaded from fsys with
// opts), a digest of everything its render may depend on: the input
// fingerprint of the tree (InputFingerprint) with the content of the other
// clusters' spec files left out. Two trees in which a cluster has the same
// fingerprint load it to the same cluster, with the same release and plugins.
//
// A spec file is left out of the other clusters' fingerprints only when the
// load read it for its cluster alone: requested once, under its own name, a
// regular file (not a link, nor the target of one). A spec file that anything
// else reads too (a `_path` key, a glob, a tasks_path) counts in every
// fingerprint, as every other file does: a change to it changes them all. Its
// path counts in every fingerprint, with the name of the cluster it defines.
//
// A cluster that uses Heat environments (environments:, requires: or
// resource_registry:) gets no fingerprint: its render reads files the load
// does not see. Nor do clusters when names are defined twice. repo must be the
// load of fsys (Load, not cached across trees); the error is
// InputFingerprint's.
func ClusterFingerprints(fsys fs.FS, opts Options, repo *Repo, skip ...string) (map[string]string, error) {
	entries, err := inputEntries(fsys, skip)
	if err != nil {
		return nil, err
	}
	owned := repo.owned
	h := sha256.New()
	writeInputsHeader(h, opts)
	fmt.Fprintf(h, "clusters 1\n")
	own := map[string]string{} // cluster → its spec file's blob id
	for _, e := range entries {
		if c, ok := owned[e.name]; ok && e.kind == "f" && e.id != "" {
			fmt.Fprintf(h, "o %s %s\n", strconv.Quote(e.name), strconv.Quote(c))
			own[c] = e.id
			continue
		}
		e.write(h)
	}
	common := hex.EncodeToString(h.Sum(nil))
	out := map[string]string{}
	seen := map[string]bool{}
	for _, c := range repo.Clusters {
		if seen[c.Name] {
			return map[string]string{}, nil
		}
		seen[c.Name] = true
	}
	for _, c := range repo.Clusters {
		if len(c.Environments) > 0 || c.Requires != nil || c.ResourceRegistry != nil {
			continue
		}
		ch := sha256.New()
		fmt.Fprintf(ch, "fuelsync cluster inputs 1\ncommon %s\ncluster %s\nspec %s\n", common, strconv.Quote(c.Name), own[c.Name])
		out[c.Name] = hex.EncodeToString(ch.Sum(nil))
	}
	return out, nil
}

// ownedSpecs maps the spec files the load of repo, through r, read for their
// cluster alone to that cluster (see ClusterFingerprints).
func ownedSpecs(repo *Repo, r *repoFS) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	targets := map[string]int{} // real file → names resolving to it
	for _, real := range r.realOf {
		targets[real]++
	}
	files := map[string]int{}
	for _, c := range repo.Clusters {
		files[c.File]++
	}
	owned := map[string]string{}
	for _, c := range repo.Clusters {
		if files[c.File] == 1 && r.decodes[c.File] == 1 && r.realOf[c.File] == c.File && targets[c.File] == 1 {
			owned[c.File] = c.Name
		}
	}
	return owned
}

func writeInputsHeader(w io.Writer, opts Options) {
	fmt.Fprintf(w, "fuelsync inputs 1\nmax_file_size %d\nmax_total_size %d\n", opts.MaxFileSize, opts.MaxTotalSize)
}

// inputEntry is one entry of a tree, as the fingerprints see it.
type inputEntry struct {
	kind   string // "d" directory, "f" regular file, "l" symbolic link
	name   string
	target string // a link's
	id     string // the content's git blob id, for a file the load may read
}

func (e inputEntry) write(w io.Writer) {
	switch e.kind {
	case "d":
		fmt.Fprintf(w, "d %s\n", strconv.Quote(e.name))
		return
	case "l":
		fmt.Fprintf(w, "l %s -> %s\n", strconv.Quote(e.name), strconv.Quote(e.target))
	}
	if e.id == "" {
		fmt.Fprintf(w, "%s %s\n", e.kind, strconv.Quote(e.name))
		return
	}
	fmt.Fprintf(w, "%s %s %s\n", e.kind, strconv.Quote(e.name), e.id)
}

// inputEntries walks fsys in lexical order (see InputFingerprint).
func inputEntries(fsys fs.FS, skip []string) ([]inputEntry, error) {
	var entries []inputEntry
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
			entries = append(entries, inputEntry{kind: "d", name: name})
			return nil
		}
		e := inputEntry{kind: "f", name: name}
		if d.Type()&fs.ModeSymlink != 0 {
			e.kind = "l"
			target, err := readLink(fsys, name)
			if err != nil {
				return err
			}
			if fi, err := fs.Stat(fsys, name); err == nil && fi.IsDir() {
				return fmt.Errorf("%s is a symbolic link to a directory: %w", name, ErrNoFingerprint)
			}
			e.target = target
		} else if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file: %w", name, ErrNoFingerprint)
		}
		if mayRead(name) {
			id, err := blobID(fsys, bh, name)
			if err != nil {
				return err
			}
			e.id = id
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		if !errors.Is(err, ErrNoFingerprint) {
			err = fmt.Errorf("%w: %w", ErrNoFingerprint, err)
		}
		return nil, err
	}
	return entries, nil
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
