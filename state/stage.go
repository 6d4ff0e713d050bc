package state

import (
	"errors"
	"os"
	"path/filepath"
)

// Stage holds contents of the next applied set in the object store before the
// set is published (PublishStaged), so that the caller need not keep them in
// memory: an apply renders a fleet cluster by cluster, stages each cluster's
// new files and drops them. Put writes an object as Publish does (checked when
// it is there, else written, fsynced and renamed into place; its directory is
// synced with the set's). The caller holds the work directory's lock from
// NewStage to the publish. An object staged and never linked is removed by
// Discard, or else by the next apply's pruning, as one a crashed run left.
type Stage struct {
	w    *Workdir
	l    *Lock
	objs *objectWriter
}

// NewStage starts staging the next set under lock l.
func (w *Workdir) NewStage(l *Lock) (*Stage, error) {
	if l == nil || l.w != w {
		return nil, errors.New("staging needs the work directory's lock")
	}
	if err := w.claim(); err != nil {
		return nil, err
	}
	return &Stage{w: w, l: l, objs: w.newObjectWriter(l)}, nil
}

// Put makes the object of data (checked, or written) and returns its sha256
// (hex), which PublishStaged's link takes. It may be called from several
// goroutines at once; data is not kept.
func (s *Stage) Put(data []byte) (string, error) {
	return s.objs.object(data)
}

// Discard removes the objects the stage wrote that no set links (an apply
// that was cancelled, or failed before its publish). The stage is not used
// afterwards.
func (s *Stage) Discard() {
	s.objs.mu.Lock()
	written := s.objs.written
	s.objs.written = nil
	s.objs.mu.Unlock()
	for _, obj := range written {
		if soleLink(obj) {
			_ = do("remove object "+filepath.Base(obj), func() error { return os.Remove(obj) })
		}
	}
}
