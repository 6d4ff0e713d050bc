package state

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/loader"
)

// The bounds of a state document. The state of the 2,000-node generated
// repository (repogen.Heavy, 4,029 artifacts) is 505 KB of JSON; MaxSize
// is over a hundred times that. A state from outside (state push, the state on
// etcd) is held to them before it is stored or expanded.
const (
	// MaxSize is the largest state document read or written, in bytes
	// (JSON; on etcd, also what its gzipped parts may expand to).
	MaxSize = 64 << 20
	// MaxField is the longest lineage, revision, tool version, input
	// fingerprint, role or tag name in a state, in bytes.
	MaxField = 256
	// MaxClusters, MaxNodes (all clusters together) and
	// MaxArtifacts bound the counts of a state.
	MaxClusters  = 10_000
	MaxNodes     = 1_000_000
	MaxArtifacts = 1_000_000
	// maxStateList bounds a node's roles and a cluster's primary tags.
	maxStateList = 1_000
	// maxArtifactPath is the longest artifact path, in bytes.
	maxArtifactPath = 1024
)

// The bounds of a serial. Serials end at 2^53, the largest integer every
// JSON reader keeps exactly (JavaScript and jq read numbers as doubles); at
// one apply a second that is 285 million years away. state push takes
// serials up to 2^52, so that a pushed state leaves room for 2^52 applies;
// nothing is published past 2^53, so a serial never wraps (2^63-1 + 1 is
// -2^63 in an int64).
const (
	MaxSerial     = 1 << 53
	MaxPushSerial = 1 << 52
)

// NextSerial is the serial of the apply after serial cur, or why there is none.
func NextSerial(cur int64) (int64, error) {
	if cur < 0 || cur >= MaxSerial {
		return 0, fmt.Errorf("the state is at serial %d, and serials end at %d (2^53): no apply can follow it; nothing was changed", cur, int64(MaxSerial))
	}
	return cur + 1, nil
}

// Check reports why st is not a state fuelsync stores when it comes from
// outside (state push): nil when it is one. Its serial must leave room for
// applies after it (1 to MaxPushSerial), its fields and counts stay within the bounds above,
// its cluster and node names are names the repository could have given
// (loader.IsName), its artifacts clean relative paths with sha256 digests.
// Checked whole before anything is written, so a state that is refused
// changes nothing.
func Check(st *State) error {
	if err := checkStateHeader(st); err != nil {
		return err
	}
	if len(st.Clusters) > MaxClusters {
		return refused("it has %d clusters, over %d", len(st.Clusters), MaxClusters)
	}
	nodes := 0
	for name, cs := range st.Clusters {
		if !loader.IsName(name) {
			return refused("its cluster name %q is not a name a repository can give", name)
		}
		if cs == nil {
			return refused("its cluster %s is null", name)
		}
		nodes += len(cs.Nodes)
		if nodes > MaxNodes {
			return refused("it has more than %d nodes", MaxNodes)
		}
		if err := checkClusterState(name, cs, st.Serial); err != nil {
			return err
		}
	}
	if len(st.ClusterInputs) > MaxClusters {
		return refused("it has %d cluster_inputs, over %d", len(st.ClusterInputs), MaxClusters)
	}
	for name, fp := range st.ClusterInputs {
		if !loader.IsName(name) {
			return refused("its cluster_inputs name %q is not a cluster name", name)
		}
		if err := checkField(fp); err != nil {
			return refused("the cluster_inputs of %s %v", name, err)
		}
	}
	if len(st.Artifacts) > MaxArtifacts {
		return refused("it names %d artifacts, over %d", len(st.Artifacts), MaxArtifacts)
	}
	for name, sum := range st.Artifacts {
		if !isArtifactPath(name) {
			return refused("its artifact %q is not a clean relative path of at most %d bytes", name, maxArtifactPath)
		}
		if !isLowerHex(sum, 64) {
			return refused("the digest of its artifact %s is not a sha256 (64 lowercase hex digits)", name)
		}
	}
	return nil
}

// refused is Check's error: why the state is refused.
func refused(format string, args ...any) error {
	return fmt.Errorf("the state is refused: "+format+"; nothing was changed", args...)
}

// checkStateHeader checks the state's own fields: its serial (1 to
// MaxPushSerial) and its strings, a lineage among them.
func checkStateHeader(st *State) error {
	if st.Serial <= 0 {
		return refused("its serial %d is not positive", st.Serial)
	}
	if st.Serial > MaxPushSerial {
		return refused("its serial %d leaves no room for the applies after it: state push takes serials up to %d (2^52)", st.Serial, int64(MaxPushSerial))
	}
	for _, f := range []struct{ name, v string }{
		{"lineage", st.Lineage}, {"revision", st.Revision}, {"tool_version", st.ToolVersion}, {"inputs", st.Inputs},
	} {
		if err := checkField(f.v); err != nil {
			return refused("its %s %v", f.name, err)
		}
	}
	if st.Lineage == "" {
		return refused("it has no lineage")
	}
	return nil
}

// checkClusterState checks the state of cluster name (cs) in a state of
// serial serial: its nodes, status, strings, the serial it changed at (not
// after the state's), its problems, pending plan and primary tags.
func checkClusterState(name string, cs *ClusterState, serial int64) error {
	if err := checkNodeStates(name, cs.Nodes); err != nil {
		return err
	}
	switch cs.Status {
	case "", StatusSynced, StatusOutOfSync, StatusHeld, StatusSuspended, StatusAwaitingApproval:
	default:
		return refused("cluster %s has status %q, not one of %s", name, cs.Status, strings.Join(Statuses, ", "))
	}
	for what, v := range map[string]string{"revision": cs.Revision, "file": cs.File} {
		if err := checkField(v); err != nil {
			return refused("the %s of cluster %s %v", what, name, err)
		}
	}
	if cs.Serial < 0 || cs.Serial > serial {
		return refused("cluster %s changed at serial %d, not one of the state's (1 to %d)", name, cs.Serial, serial)
	}
	if len(cs.Problems) > MaxClusterProblems+1 {
		return refused("cluster %s has %d problems, over %d", name, len(cs.Problems), MaxClusterProblems+1)
	}
	for _, p := range cs.Problems {
		if len(p) > maxProblemLen {
			return refused("a problem of cluster %s is %d bytes long, over %d", name, len(p), maxProblemLen)
		}
	}
	if pd := cs.Pending; pd != nil {
		for what, v := range map[string]string{"revision": pd.Revision, "digest": pd.Digest, "base": pd.Base} {
			if err := checkField(v); err != nil {
				return refused("the pending plan's %s of cluster %s %v", what, name, err)
			}
		}
	}
	return checkPrimaries(name, cs.Primary)
}

// checkNodeStates checks the nodes of cluster name: node names, and each
// node's roles (at most maxStateList, none empty).
func checkNodeStates(name string, nodes map[string]NodeState) error {
	for node, ns := range nodes {
		if !loader.IsName(node) {
			return refused("its node name %q (cluster %s) is not a name a repository can give", node, name)
		}
		if len(ns.Roles) > maxStateList {
			return refused("node %s of cluster %s has %d roles, over %d", node, name, len(ns.Roles), maxStateList)
		}
		for _, r := range ns.Roles {
			if err := checkField(r); err != nil || r == "" {
				return refused("a role of node %s (cluster %s) %v", node, name, orEmpty(err))
			}
		}
	}
	return nil
}

// checkPrimaries checks the primary tags of cluster name: at most
// maxStateList, each a tag naming a node.
func checkPrimaries(name string, primary map[string]string) error {
	if len(primary) > maxStateList {
		return refused("cluster %s has %d primary tags, over %d", name, len(primary), maxStateList)
	}
	for tag, node := range primary {
		if err := checkField(tag); err != nil || tag == "" {
			return refused("a primary tag of cluster %s %v", name, orEmpty(err))
		}
		if !loader.IsName(node) {
			return refused("the primary %s of cluster %s is %q, not a node name", tag, name, node)
		}
	}
	return nil
}

// maxProblemLen bounds one problem line of a cluster (file:line:col: error:
// message; messages quote names cut to 200 bytes).
const maxProblemLen = 4096

func orEmpty(err error) error {
	if err == nil {
		return errors.New("is empty")
	}
	return err
}

// checkField says why a string field of a state is refused: longer than
// MaxField, not UTF-8, or with a control character.
func checkField(s string) error {
	if len(s) > MaxField {
		return fmt.Errorf("is %d bytes long, over %d", len(s), MaxField)
	}
	if !utf8.ValidString(s) {
		return errors.New("is not UTF-8")
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return errors.New("has a control character")
		}
	}
	return nil
}

// isArtifactPath reports whether name may name an applied file: a clean
// relative path, not hidden at its top, at most maxArtifactPath bytes (what a
// set's put accepts).
func isArtifactPath(name string) bool {
	return name != "" && len(name) <= maxArtifactPath && utf8.ValidString(name) && !path.IsAbs(name) &&
		path.Clean(name) == name && name != ".." && !strings.HasPrefix(name, "../") && !strings.HasPrefix(name, ".") &&
		!strings.ContainsAny(name, "\x00\\")
}
