package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// LockInfo says who holds the work directory's lock; it is written into the lock
// file by the holder (the flock itself is what locks: the kernel releases it when
// the holder exits, however it exits).
type LockInfo struct {
	PID       int    `json:"pid"`
	Operation string `json:"operation"`
	User      string `json:"user"`
	Host      string `json:"host"`
	Since     string `json:"since"`
}

// ErrUnsupportedSystem says this system cannot write a work directory: only
// Linux does (system_linux.go; CheckSystem).
var ErrUnsupportedSystem = errors.New("not supported on this system (" + runtime.GOOS + "): fuelsync writes a work directory (apply, approve, watch, serve, state push) on Linux only; validate, render, plan, diff, explain, tags and plugin run here")

// Lock is a held lock.
type Lock struct {
	w *Workdir
	f *os.File
	// release releases the backend's lock (nil with the work directory's own).
	release func() error
	// holder is what the lock file holds (written again by stamp).
	holder []byte
	// read is the applied state Tidy read under the lock, until a publish
	// under it (ReadStateUnder); nil when none.
	read *State
}

// applied is the state Tidy read under l for w (nil: none, or l nil).
func (l *Lock) applied(w *Workdir) *State {
	if l == nil || l.w != w || w.Backend != nil {
		return nil
	}
	return l.read
}

// LockedError says another process holds the lock.
type LockedError struct {
	Path string
	// What is locked ("the state etcd://..."); the work directory when empty.
	What   string
	Holder LockInfo
}

func (e *LockedError) Error() string {
	h := e.Holder
	what := e.What
	if what == "" {
		what = "the work directory"
	}
	if h.PID == 0 {
		return fmt.Sprintf("%s is locked (%s); retry, or wait with --lock-timeout", what, e.Path)
	}
	return fmt.Sprintf("%s is locked by pid %d (%s, %s@%s, since %s) through %s; retry, or wait with --lock-timeout",
		what, h.PID, h.Operation, h.User, h.Host, h.Since, e.Path)
}

// Lock takes the exclusive lock <workdir>/lock for op, waiting up to timeout (0:
// not at all) while another process holds it. With a Backend, its lock first,
// then the work directory's (which guards the local artifacts).
func (w *Workdir) Lock(ctx context.Context, op string, timeout time.Duration) (*Lock, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	// Nothing is locked or made where a work directory cannot be written
	// (system_other.go).
	if err := CheckSystem(); err != nil {
		return nil, err
	}
	if w.Backend == nil {
		return w.flock(ctx, op, timeout)
	}
	start := time.Now()
	release, err := w.Backend.Lock(ctx, op, timeout)
	if err != nil {
		return nil, err
	}
	l, err := w.flock(ctx, op, max(0, timeout-time.Since(start)))
	if err != nil {
		_ = release()
		return nil, err
	}
	l.release = release
	return l, nil
}

func (w *Workdir) flock(ctx context.Context, op string, timeout time.Duration) (*Lock, error) {
	// Not even the lock file goes into a directory that is not fuelsync's.
	if err := w.checkOwnable(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(w.Dir, 0o755); err != nil {
		return nil, err
	}
	name := filepath.Join(w.Dir, "lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		busy, err := tryLock(f)
		if err == nil && !busy {
			break
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", name, err)
		}
		if !time.Now().Before(deadline) {
			f.Close()
			// The holder writes who it is just after taking the lock: give it a
			// moment when the file is still empty.
			holder := readHolder(name)
			for i := 0; holder.PID == 0 && i < 20; i++ {
				time.Sleep(10 * time.Millisecond)
				holder = readHolder(name)
			}
			return nil, &LockedError{Path: name, Holder: holder}
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	data, _ := json.Marshal(HolderInfo(op))
	data = append(data, '\n')
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(data, 0)
	}
	l := &Lock{w: w, f: f, holder: data}
	// Under the lock: the marker is found, or written into a new, empty or
	// older work directory (checked again: it may have changed meanwhile).
	if err := w.claim(); err != nil {
		l.Unlock()
		return nil, err
	}
	return l, nil
}

func readHolder(name string) LockInfo {
	var info LockInfo
	data, err := os.ReadFile(name)
	if err == nil {
		_ = json.Unmarshal(data, &info)
	}
	return info
}

// Unlock releases the lock.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing releases the flock
	l.f = nil
	if l.release != nil {
		if rerr := l.release(); err == nil {
			err = rerr
		}
		l.release = nil
	}
	return err
}
