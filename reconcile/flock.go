package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"syscall"
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

// Lock is a held lock.
type Lock struct {
	w *Workdir
	f *os.File
}

// LockedError says another process holds the lock.
type LockedError struct {
	Path   string
	Holder LockInfo
}

func (e *LockedError) Error() string {
	h := e.Holder
	if h.PID == 0 {
		return fmt.Sprintf("the work directory is locked (%s); retry, or wait with --lock-timeout", e.Path)
	}
	return fmt.Sprintf("the work directory is locked by pid %d (%s, %s@%s, since %s) through %s; retry, or wait with --lock-timeout",
		h.PID, h.Operation, h.User, h.Host, h.Since, e.Path)
}

// Lock takes the exclusive lock <workdir>/lock for op, waiting up to timeout (0:
// not at all) while another process holds it.
func (w *Workdir) Lock(ctx context.Context, op string, timeout time.Duration) (*Lock, error) {
	if ctx == nil {
		ctx = context.Background()
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
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
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
	info := LockInfo{PID: os.Getpid(), Operation: op, Since: time.Now().UTC().Format(time.RFC3339)}
	if u, err := user.Current(); err == nil {
		info.User = u.Username
	}
	info.Host, _ = os.Hostname()
	data, _ := json.Marshal(info)
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(data, '\n'), 0)
	}
	return &Lock{w: w, f: f}, nil
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
	return err
}
