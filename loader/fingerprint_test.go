package loader

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
)

// TestInputFingerprint: what changes the fingerprint of a tree (a data file's
// content, a file added anywhere, the load options) and what does not (a
// README's content); a commit and its checkout have the same fingerprint.
func TestInputFingerprint(t *testing.T) {
	dir := t.TempDir()
	gitTestWrite(t, dir, map[string]string{
		"README.md":                      "hello\n",
		"docs/guide.md":                  "guide\n",
		"fuelsync.yaml":                  "interval: 1m\n",
		"clusters/c.yaml":                "nodes: {}\n",
		"plugins/p/metadata.yaml":        "name: p\n",
		"plugins/p/deployment_scripts/a": "#!/bin/sh\n",
		"common/roles.yaml":              "a: 1\n",
		"common/link.yaml":               "-> roles.yaml",
	})
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	work := func() string {
		t.Helper()
		s, err := InputFingerprint(os.DirFS(dir), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := work()
	h := gitTestCommit(t, repo, 0, "first")
	rev, _, err := OpenRevision(dir, h.String())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := InputFingerprint(rev, Options{}); err != nil || got != base {
		t.Errorf("the commit's fingerprint %s (%v), the working tree's %s", got, err, base)
	}
	if got, _ := InputFingerprint(os.DirFS(dir), Options{MaxFileSize: 1 << 20}); got == base {
		t.Error("other load options: the same fingerprint")
	}

	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "hello, edited\n")
	write("docs/guide.md", "guide, edited\n")
	if got := work(); got != base {
		t.Error("editing the README and the docs changed the fingerprint")
	}
	for _, name := range []string{"fuelsync.yaml", "clusters/c.yaml", "plugins/p/metadata.yaml", "plugins/p/deployment_scripts/a", "common/roles.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		write(name, string(data)+"# edited\n")
		if got := work(); got == base {
			t.Errorf("editing %s left the fingerprint", name)
		}
		write(name, string(data))
	}
	if got := work(); got != base {
		t.Fatal("the edits undone: another fingerprint")
	}
	write("docs/new.md", "new\n")
	if got := work(); got == base {
		t.Error("a new file left the fingerprint")
	}
	if err := os.Remove(filepath.Join(dir, "docs/new.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../common", filepath.Join(dir, "clusters", "common")); err != nil {
		t.Fatal(err)
	}
	if _, err := InputFingerprint(os.DirFS(dir), Options{}); !errors.Is(err, ErrNoFingerprint) {
		t.Errorf("a link to a directory: %v, want ErrNoFingerprint", err)
	}
}
