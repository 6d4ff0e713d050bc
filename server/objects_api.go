package server

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"

	"github.com/fuelsync/fuelsync/state"
)

// The bounds of one POST /api/v1/objects.
const (
	// maxObjectsAsked bounds the digests asked (a cluster's files: a few per
	// node).
	maxObjectsAsked = 200_000
	// maxObjectsAnswer bounds the bytes of the objects answered: the bound
	// of the reader (controller's fetchMaxCluster), which refuses more.
	maxObjectsAnswer = 2 << 30
)

// objects answers POST /api/v1/objects, for the other shard replicas (serve
// --shard): the body is sha256 digests (hex), one a line; the answer, for
// each distinct one in the order first asked (a repeated digest is answered
// once: 13 MB of one digest was answered with 660 MB), a line "<sha256>
// <size>" and the object's bytes, as this replica's work directory holds them
// (each checked against its digest as it is read), until maxObjectsAnswer
// bytes. 404 when it lacks one of them, before any is sent. The reader
// trusts none of it: it checks every file against the digest the committed
// state gives it (api.Client.Objects, for controller/fetch.go). With an API
// token, it needs it.
func (s *Server) objects(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	if s.Replica == nil || !s.Replica.Shard {
		http.Error(w, "this replica is no shard (serve --shard): it serves no objects", http.StatusNotFound)
		return
	}
	sc := bufio.NewScanner(http.MaxBytesReader(w, r.Body, maxObjectsAsked*65+1))
	var sums []string
	asked := map[string]bool{}
	for line := 1; sc.Scan(); line++ {
		sum := strings.TrimSpace(sc.Text())
		if sum == "" {
			continue
		}
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			http.Error(w, fmt.Sprintf("line %d is not a sha256 in lower-case hex", line), http.StatusBadRequest)
			return
		}
		if asked[sum] {
			continue
		}
		asked[sum] = true
		if len(sums) == maxObjectsAsked {
			http.Error(w, fmt.Sprintf("more than %d digests", maxObjectsAsked), http.StatusRequestEntityTooLarge)
			return
		}
		sums = append(sums, sum)
	}
	if err := sc.Err(); err != nil {
		http.Error(w, "reading the digests: "+err.Error(), http.StatusBadRequest)
		return
	}
	wd := s.Loop.Workdir
	digests := map[string]string{}
	for _, sum := range sums {
		digests[sum] = sum
	}
	if !wd.HasObjects(digests, sums) {
		http.Error(w, "this replica lacks some of these objects", http.StatusNotFound)
		return
	}
	writeObjects(w, wd, sums, maxObjectsAnswer)
}

// writeObjects answers the objects sums (distinct) of wd, each a line
// "<sha256> <size>" and its bytes, and stops before the one that would take
// the answer over limit bytes, or at one gone meanwhile (pruned) or damaged:
// the reader renders what it did not get.
func writeObjects(w http.ResponseWriter, wd *state.Workdir, sums []string, limit int64) {
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := bufio.NewWriterSize(w, 256<<10)
	defer bw.Flush()
	var sent int64
	for _, sum := range sums {
		data, err := wd.ReadObject(sum)
		if err != nil {
			return
		}
		head := fmt.Sprintf("%s %d\n", sum, len(data))
		if sent += int64(len(head) + len(data)); sent > limit {
			return
		}
		bw.WriteString(head)
		if _, err := bw.Write(data); err != nil {
			return
		}
	}
}
