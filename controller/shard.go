package controller

// Shards (serve --shard): the replicas of a state on etcd share its clusters
// instead of electing one leader. Each live replica is a member (a key on its
// lease); each cluster belongs to the member that rendezvous hashing picks
// (Owner), which claims the cluster's owner key on its lease and alone
// renders, plans, applies and commits it. Every replica serves every
// cluster: it makes each committed set from the objects it has and renders
// of the clusters it lacks, checked by digest, as followers do.

import (
	"crypto/sha256"
	"encoding/binary"
)

// Owner is the member of members that owns cluster: the one whose hash with
// the cluster is highest (rendezvous, or highest-random-weight, hashing). A
// member that joins takes from each other member only the clusters it now
// scores highest on, about 1/N of them; one that leaves gives only its own
// clusters away, each to its runner-up. "" when there is no member.
func Owner(cluster string, members []string) string {
	best, bestScore := "", uint64(0)
	for _, m := range members {
		if s := score(cluster, m); best == "" || s > bestScore || s == bestScore && m < best {
			best, bestScore = m, s
		}
	}
	return best
}

// score is the weight of member for cluster: the first 8 bytes of
// sha256(len(cluster) cluster member), so that no two pairs of names collide
// by concatenation.
func score(cluster, member string) uint64 {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(cluster)))
	h.Write(n[:])
	h.Write([]byte(cluster))
	h.Write([]byte(member))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}
