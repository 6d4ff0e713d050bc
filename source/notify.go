package source

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchTree calls trigger once for every burst of changes under root: events
// closer than debounce to each other are one burst, so that an editor's save
// (write a temporary file, rename it over the original) is one change. New
// directories are watched as they appear (inotify watches one directory each);
// skip leaves out paths (the .git directory, the work directory). It returns when
// ctx ends.
func WatchTree(ctx context.Context, root string, skip func(path string) bool, debounce time.Duration, trigger func()) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	add := func(dir string) {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if p != root && skip != nil && skip(p) {
				return filepath.SkipDir
			}
			_ = w.Add(p)
			return nil
		})
	}
	add(root)
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if skip != nil && skip(ev.Name) {
				continue
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
					add(ev.Name)
				}
			}
			fire = time.After(debounce) // restarted by every event of the burst
		case <-w.Errors:
		case <-fire:
			fire = nil
			trigger()
		}
	}
}
