package loader

import (
	"errors"
	"path"
	"strings"
)

// CheckWorkdirSetting reports why a repository's workdir: setting is refused:
// nil when it is a relative path that stays inside the repository, is not the
// repository itself, and has no .git component. A repository is untrusted
// input, and fuelsync removes files in its work directory: workdir: .git
// would point it into the repository's own git directory. Where the work
// directory is put elsewhere, the operator says so with --workdir. (What the
// path names on disk, symlinks included, is checked where it is used.)
func CheckWorkdirSetting(dir string) error {
	p := strings.ReplaceAll(dir, "\\", "/")
	switch {
	case strings.TrimSpace(dir) == "":
		return errors.New("is empty")
	case path.IsAbs(p):
		return errors.New("is an absolute path: a repository may only put its work directory inside itself (give another directory with --workdir)")
	case path.Clean(p) == ".":
		return errors.New("is the repository itself: the work directory is a directory of its own (the default is .fuelsync)")
	case path.Clean(p) == ".." || strings.HasPrefix(path.Clean(p), "../"):
		return errors.New("leaves the repository: a repository may only put its work directory inside itself (give another directory with --workdir)")
	}
	for _, comp := range strings.Split(path.Clean(p), "/") {
		if strings.EqualFold(comp, ".git") {
			return errors.New("is inside a .git directory: fuelsync would write and remove files among git's own")
		}
	}
	for _, c := range dir {
		if c < 0x20 || c == 0x7f {
			return errors.New("contains a control character")
		}
	}
	return nil
}
