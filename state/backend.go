package state

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Backend keeps the state document and the writers' lock. The work directory
// keeps both itself when its Backend is nil (the state inside the current
// applied set, the lock a flock); with a Backend (etcd), the state and the lock
// live there and the work directory keeps only the applied artifacts, which the
// state's manifest (Artifacts: path → sha256) describes.
//
// A Backend is what a later replica needs to follow a leader: a state any
// process can read, a lock that dies with its holder, and a commit that refuses
// a writer that read an older state.
type Backend interface {
	// String names the backend in messages ("etcd://host:2379/prefix").
	String() string
	// ReadState returns the stored state; an empty state (serial 0, no
	// lineage) when none is stored.
	ReadState(ctx context.Context) (*State, error)
	// Lock takes the writers' lock for op, waiting up to timeout (0: not at
	// all); a *LockedError names the holder when it is held. The lock is
	// released by the returned function, or by the holder's death.
	Lock(ctx context.Context, op string, timeout time.Duration) (unlock func() error, err error)
	// Commit replaces the stored state, which must still be at serial prev
	// (0: none stored), with next. A *StaleStateError when another writer
	// committed meanwhile: nothing is changed then.
	Commit(ctx context.Context, prev int64, next *State) error
	// Close releases the connection.
	Close() error
}

// StaleStateError says the state moved between its read and a commit: a writer
// that read serial Read finds the state at serial Now.
type StaleStateError struct {
	Backend  string
	Read     int64
	Now      *State
	Applying int64
}

func (e *StaleStateError) Error() string {
	return fmt.Sprintf("the state in %s moved while serial %d was being applied: it was read at serial %d, but the state is now at serial %d (applied revision %.12s); nothing was applied; run plan again",
		e.Backend, e.Applying, e.Read, e.Now.Serial, e.Now.Revision)
}

// backendTimeout bounds one call to a Backend made by the Workdir methods
// that take no context.
const backendTimeout = 30 * time.Second

// LineageError says a pushed state belongs to another lineage than the one
// stored: it is another work directory's or cluster's history.
type LineageError struct {
	Dest           string
	Pushed, Stored *State
}

func (e *LineageError) Error() string {
	return fmt.Sprintf("refusing to push: the state has lineage %s (serial %d), but %s holds lineage %s (serial %d); a push continues a state's own history, it does not replace another one. Nothing was changed",
		e.Pushed.Lineage, e.Pushed.Serial, e.Dest, e.Stored.Lineage, e.Stored.Serial)
}

// Push stores st (from state pull, or another backend) as the state of w, as
// Terraform's state push does: refused over a different lineage, or when st is
// older than the stored state; nothing to do when it is the stored state. Into
// the work directory's own state, the applied set of st's serial must be in the
// work directory with the artifacts st names (a state and its artifacts switch
// together there); on a Backend, the artifacts stay where they are. A state
// outside Check's bounds is refused first. Either way the push is whole
// or nothing: a set is switched to with its state, a Backend's commit puts
// the header last and removes the parts it wrote when it does not happen. The
// caller holds lock l. It returns whether anything changed.
func Push(w *Workdir, l *Lock, st *State) (bool, error) {
	if l == nil || l.w != w {
		return false, errors.New("pushing a state needs the lock")
	}
	if st.Lineage == "" || st.Serial <= 0 {
		return false, errors.New("refusing to push a state that has no lineage or serial (nothing applied)")
	}
	if err := Check(st); err != nil {
		return false, err
	}
	cur, err := w.ReadState()
	if err != nil {
		return false, err
	}
	dest := "the work directory " + w.Dir
	if w.Backend != nil {
		dest = w.Backend.String()
	}
	if cur.Serial > 0 && cur.Lineage != st.Lineage {
		return false, &LineageError{Dest: dest, Pushed: st, Stored: cur}
	}
	if st.Serial < cur.Serial {
		return false, fmt.Errorf("refusing to push serial %d: %s is at serial %d, newer; pull it first. Nothing was changed", st.Serial, dest, cur.Serial)
	}
	if st.Serial == cur.Serial {
		a, _ := json.Marshal(st)
		b, _ := json.Marshal(cur)
		if bytes.Equal(a, b) {
			return false, nil
		}
		return false, fmt.Errorf("refusing to push serial %d: %s is at serial %d with a different content; a changed state needs a higher serial. Nothing was changed", st.Serial, dest, cur.Serial)
	}
	if w.Backend != nil {
		ctx, cancel := context.WithTimeout(context.Background(), backendTimeout)
		defer cancel()
		if err := w.Backend.Commit(ctx, cur.Serial, st); err != nil {
			return false, err
		}
		if _, err := os.Stat(w.SetDir(st.Serial)); err == nil {
			if err := w.relink(st.Serial); err != nil {
				return true, &AppliedError{Serial: st.Serial, Err: err}
			}
		}
		return true, nil
	}
	// Into the work directory: a new set copied from the local one of st's
	// serial, checked against st's manifest, switched with st.
	src, set := w.SetDir(st.Serial), w.SetFS(st.Serial)
	files := map[string][]byte{}
	for name, want := range st.Artifacts {
		data, err := fs.ReadFile(set, name)
		sum := sha256.Sum256(data)
		if err != nil || hex.EncodeToString(sum[:]) != want {
			return false, fmt.Errorf("refusing to push serial %d into %s: its applied set %s does not hold %s as the state names it; a state is pushed into a work directory with its artifacts (apply instead). Nothing was changed",
				st.Serial, dest, src, name)
		}
		files[name] = data
	}
	err = w.publish(l, st, true, nil, func(put func(string, []byte) error, _ func(string, string) error) error {
		for name, data := range files {
			if err := put(name, data); err != nil {
				return err
			}
		}
		return nil
	})
	return err == nil, err
}

// Close closes the work directory's Backend, if any.
func (w *Workdir) Close() error {
	if w.Backend == nil {
		return nil
	}
	return w.Backend.Close()
}

// StateName names where w keeps its state, for messages.
func (w *Workdir) StateName() string {
	if w.Backend != nil {
		return w.Backend.String()
	}
	return "the work directory " + w.Dir
}
