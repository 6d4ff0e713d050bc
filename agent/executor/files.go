package executor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// upload writes upload_file's data.
func (e *Executor) upload(p *plan) outcome {
	f := p.files[0]
	if err := writeFile(f); err != nil {
		return outcome{msg: err.Error()}
	}
	return outcome{ok: true, msg: fmt.Sprintf("wrote %s (%d bytes)", f.dst, len(*f.data))}
}

// copyFiles copies copy_files' files, each atomically; the task fails when
// one did not copy (the others are copied all the same, as astute did).
func (e *Executor) copyFiles(p *plan) outcome {
	var failed []string
	for _, f := range p.files {
		if err := writeFile(f); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return outcome{msg: fmt.Sprintf("%d of %d files not copied: %s", len(failed), len(p.files), strings.Join(failed, "; "))}
	}
	return outcome{ok: true, msg: fmt.Sprintf("copied %d files", len(p.files))}
}

// writeFile writes f.dst (its data, or a copy of f.src, a regular file)
// atomically, with f.perm, making its missing parent directories with
// f.dirPerm.
func writeFile(f fileCopy) error {
	var src io.Reader
	if f.data != nil {
		src = strings.NewReader(*f.data)
	} else {
		in, err := openRegular(f.src)
		if err != nil {
			return err
		}
		defer in.Close()
		src = in
	}
	if err := mkdirs(filepath.Dir(f.dst), f.dirPerm); err != nil {
		return err
	}
	if err := writeAtomic(f.dst, src, f.perm); err != nil {
		return fmt.Errorf("writing %s: %w", f.dst, err)
	}
	return nil
}

// openRegular opens path for reading when it is a regular file (following
// symbolic links); a FIFO or a device is refused without blocking.
func openRegular(path string) (*os.File, error) {
	in, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	fi, err := in.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", path)
	}
	if err != nil {
		in.Close()
		return nil, err
	}
	return in, nil
}

// writeAtomic writes src to path through a synced temporary file in the
// same directory, renamed over path, with mode perm (whatever the umask),
// then syncs the directory: a reader sees the old file or the whole new one.
func writeAtomic(path string, src io.Reader, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".fuelsync-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, src); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir syncs directory dir, so that a rename in it lasts.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// mkdirs makes dir and its missing parents, each with mode perm (whatever
// the umask); directories that exist are left as they are.
func mkdirs(dir string, perm fs.FileMode) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s: not a directory", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirs(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	} else if err != nil {
		return nil // made meanwhile by someone else: left as it is
	}
	return os.Chmod(dir, perm)
}
