package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// InputsKey is the input fingerprint of a render: the fingerprint of the files
// loaded (loader.InputFingerprint), the tool version, and what the render reads
// of the applied state st (its clusters: deployed nodes and primary tags).
//
// Apply records it computed with the state it writes, not the one it planned
// against: a render with the new state picks the same primaries (each primary
// tag is sticky to the node the state names, and the new state names the node
// the render picked), so the artifacts applied are also the render of the
// same inputs with the new state.
func InputsKey(files, toolVersion string, st *State) string {
	h := sha256.New()
	fmt.Fprintf(h, "fuelsync render inputs 1\nfiles %s\ntool %s\n", files, toolVersion)
	if st != nil {
		// What the render reads of each cluster's record (as states wrote it
		// before clusters had statuses: the same bytes, so older states'
		// keys still match); a cluster's status and history are not inputs.
		clusters := make(map[string]renderInputs, len(st.Clusters))
		for name, cs := range st.Clusters {
			clusters[name] = renderInputs{Nodes: cs.Nodes, Primary: cs.Primary}
		}
		b, _ := json.Marshal(clusters) // map keys sorted: deterministic
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Unchanged says whether the applied state's artifacts are already the render
// of inputs whose fingerprint is files, by the tool version toolVersion: a plan
// of them has no changes, without rendering. False when nothing is applied,
// when the state has no fingerprint (written by an older version) or files is
// empty (not fingerprinted).
func (st *State) Unchanged(files, toolVersion string) bool {
	return st != nil && st.Serial > 0 && st.Inputs != "" && files != "" &&
		st.Inputs == InputsKey(files, toolVersion, st)
}
