package state

import (
	"os"
	"path/filepath"
)

// KeptSets lists the serials of the applied sets the work directory keeps
// (the Keep newest, and the current one), ascending.
func (w *Workdir) KeptSets() []int64 { return w.sets() }

// SetState reads the state of the kept applied set n (its .state.json), as
// it was applied.
func (w *Workdir) SetState(n int64) (*State, error) {
	name := filepath.Join(w.SetDir(n), ".state.json")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return Parse(name, data)
}
