package server

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
)

// maxObjectsAsked bounds the digests of one POST /api/v1/objects (a
// cluster's files: a few per node).
const maxObjectsAsked = 200_000

// objects answers POST /api/v1/objects, for the other shard replicas (serve
// --shard): the body is sha256 digests (hex), one a line; the answer, for
// each in order, a line "<sha256> <size>" and the object's bytes, as this
// replica's work directory holds them (each checked against its digest as it
// is read). 404 when it lacks one of them, before any is sent. The reader
// trusts none of it: it checks every file against the digest the committed
// state gives it (controller/fetch.go). With an API token, it needs it.
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
	for sc.Scan() {
		sum := strings.TrimSpace(sc.Text())
		if sum == "" {
			continue
		}
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			http.Error(w, fmt.Sprintf("line %d is not a sha256 in lower-case hex", len(sums)+1), http.StatusBadRequest)
			return
		}
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
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := bufio.NewWriterSize(w, 256<<10)
	for _, sum := range sums {
		data, err := wd.ReadObject(sum)
		if err != nil {
			// Gone meanwhile (pruned) or damaged: the answer stops short,
			// and the reader renders the cluster itself.
			return
		}
		fmt.Fprintf(bw, "%s %d\n", sum, len(data))
		if _, err := bw.Write(data); err != nil {
			return
		}
	}
	_ = bw.Flush()
}
