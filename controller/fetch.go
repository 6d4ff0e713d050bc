package controller

// A shard replica makes each committed set from the files it has: its own
// clusters' (it rendered them), and the other owners' clusters' files,
// fetched from their owners (POST /api/v1/objects of the owner's advertised
// URL, the member key's "url") instead of rendered. The committed state is
// the truth, the owner is not trusted: every file fetched is kept only when
// its sha256 is the digest the state gives it, and within bounds. A cluster
// whose owner cannot be reached, has no URL, or sends one file that does not
// match is rendered here, as before (materialise), and the reason logged.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/internal/redact"
	"github.com/fuelsync/fuelsync/state"
)

// The bounds of a fetch from another owner.
const (
	// fetchMaxFile is the largest file taken from an owner.
	fetchMaxFile = 64 << 20
	// fetchMaxCluster bounds the bytes of one cluster's files.
	fetchMaxCluster = 2 << 30
	// fetchTimeout bounds the fetch of one cluster's files.
	fetchTimeout = 2 * time.Minute
	// fetchParallel is how many clusters are fetched at once.
	fetchParallel = 4
	// fetchBatch is how many bytes of checked files are stored at once.
	fetchBatch = 32 << 20
)

// CheckAdvertiseURL checks a replica's advertised URL (serve
// --advertise-url): http or https, a host, and no credentials, query nor
// fragment (it is stored on etcd, readable by every replica).
func CheckAdvertiseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("the advertised URL %q does not parse: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("the advertised URL %q is not http(s)://host[:port][/path] without credentials, query or fragment", redact.Text(s))
	}
	return nil
}

// fetchClient is the HTTP client of the fetches: no proxy, no redirect
// followed (the token goes to the URL advertised, nowhere else).
var fetchClient = &http.Client{
	Transport: &http.Transport{
		MaxIdleConnsPerHost: fetchParallel,
		IdleConnTimeout:     30 * time.Second,
		// An owner answers at once (it streams the files it has); one that
		// does not is stopped or stuck, and its clusters are rendered
		// rather than hold up the reconcile that needs the set.
		ResponseHeaderTimeout: 5 * time.Second,
	},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// fetchOthers stores, as objects of the work directory, the files of st's
// clusters this replica lacks, fetched from their owners and checked by
// digest; the clusters it cannot fetch are left to materialise, which
// renders them.
func (r *Replica) fetchOthers(ctx context.Context, s *shardState, st *state.State) {
	w := r.Loop.Workdir
	if st == nil || st.Serial == 0 || s == nil {
		return
	}
	if _, err := w.SetFS(st.Serial).Open(".state.json"); err == nil {
		return // the set is here already
	}
	files := clusterFiles(st)
	var lacking []string
	for c, names := range files {
		if !w.HasObjects(st.Artifacts, names) {
			lacking = append(lacking, c)
		}
	}
	if len(lacking) == 0 {
		return
	}
	slices.Sort(lacking)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	owners, err := s.sh.Owners(rctx)
	var urls map[string]string
	if err == nil {
		urls, err = s.sh.MemberURLs(rctx)
	}
	cancel()
	if err != nil {
		r.log().Warn("shard: the owners are not known; rendering the other owners' clusters", "replica", s.member.ID(), "error", redact.Text(err.Error()))
		return
	}
	type job struct{ cluster, owner, url string }
	var jobs []job
	for _, c := range lacking {
		owner := owners[c]
		if owner == "" {
			owner = s.owner(c)
		}
		if owner == "" || owner == s.member.ID() {
			continue // this replica's own: rendered
		}
		u := urls[owner]
		if u == "" || CheckAdvertiseURL(u) != nil {
			r.log().Info("shard: the owner advertises no URL; rendering its cluster", "replica", s.member.ID(), "cluster", c, "owner", owner)
			continue
		}
		jobs = append(jobs, job{c, owner, u})
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, fetchParallel)
	var mu sync.Mutex
	var fetched []string
	var bytesIn int64
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := r.fetchCluster(ctx, j.url, st, files[j.cluster])
			if err != nil {
				if ctx.Err() == nil {
					r.log().Warn("shard: fetching a cluster's files from its owner failed; rendering them", "replica", s.member.ID(), "cluster", j.cluster, "owner", j.owner, "serial", st.Serial, "error", redact.Text(err.Error()))
				}
				return
			}
			mu.Lock()
			fetched, bytesIn = append(fetched, j.cluster), bytesIn+n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(fetched) > 0 {
		slices.Sort(fetched)
		r.log().Info("shard: fetched the other owners' clusters", "replica", s.member.ID(), "serial", st.Serial, "clusters", fetched, "bytes", bytesIn)
	}
}

// fetchCluster fetches the files names of st that the work directory lacks
// from the owner at base and stores each whose sha256 is st's digest; an
// error, and nothing more stored, at the first that is not, or beyond the
// bounds. It returns the bytes stored.
func (r *Replica) fetchCluster(ctx context.Context, base string, st *state.State, names []string) (int64, error) {
	var sums []string
	for _, name := range names {
		// Only the files it lacks: after a change most of a cluster's
		// files are the objects of the sets before.
		if !r.Loop.Workdir.HasObjects(st.Artifacts, []string{name}) {
			sums = append(sums, st.Artifacts[name])
		}
	}
	slices.Sort(sums)
	sums = slices.Compact(sums)
	if len(sums) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/api/v1/objects", strings.NewReader(strings.Join(sums, "\n")+"\n"))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "text/plain")
	if len(r.APIToken) > 0 {
		req.Header.Set("Authorization", "Bearer "+string(r.APIToken))
	}
	resp, err := fetchClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("the owner answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var total, batchSize int64
	var batch [][]byte
	flush := func() error {
		err := r.Loop.Workdir.PutObjects(batch)
		batch, batchSize = nil, 0
		return err
	}
	for _, sum := range sums {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, fmt.Errorf("the answer stops before the file %s: %v", sum, err)
		}
		got, size, ok := strings.Cut(strings.TrimSuffix(string(line), "\n"), " ")
		n, perr := strconv.ParseInt(size, 10, 64)
		if !ok || got != sum || perr != nil || n < 0 {
			return 0, fmt.Errorf("the answer has %q where the file %s is due", redact.Text(string(line)), sum)
		}
		if n > fetchMaxFile {
			return 0, fmt.Errorf("the file %s is %d bytes, over the bound of %d", sum, n, fetchMaxFile)
		}
		if total += n; total > fetchMaxCluster {
			return 0, fmt.Errorf("the cluster's files are over the bound of %d bytes", fetchMaxCluster)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(br, data); err != nil {
			return 0, fmt.Errorf("the answer stops within the file %s: %v", sum, err)
		}
		h := sha256.Sum256(data)
		if hex.EncodeToString(h[:]) != sum {
			return 0, fmt.Errorf("the file sent as %s has the sha256 %s: it does not match the committed digest, refused", sum, hex.EncodeToString(h[:]))
		}
		batch, batchSize = append(batch, data), batchSize+n
		if batchSize >= fetchBatch {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return total, nil
}
