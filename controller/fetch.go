package controller

// A shard replica makes each committed set from the files it has: its own
// clusters' (it rendered them), and the other owners' clusters' files,
// fetched from their owners (api.Client.Objects: POST /api/v1/objects of the
// owner's advertised URL, the member key's "url") instead of rendered. The
// committed state is the truth, the owner is not trusted: every file fetched
// is kept only when its sha256 is the digest the state gives it, and within
// bounds. A cluster whose owner cannot be reached, has no URL, or sends one
// file that does not match is rendered here, as before (materialise), and the
// reason logged.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
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
	jobs := r.fetchJobs(ctx, s, lacking)
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

// fetchJob is a cluster to fetch from its owner, at the URL it advertises.
type fetchJob struct{ cluster, owner, url string }

// fetchJobs are the clusters of lacking to fetch: those of another owner
// (as etcd's owner keys say, or Assign while a cluster has none) that
// advertises a URL. None when the owners cannot be read.
func (r *Replica) fetchJobs(ctx context.Context, s *shardState, lacking []string) []fetchJob {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	owners, err := s.sh.Owners(rctx)
	var urls map[string]string
	if err == nil {
		urls, err = s.sh.MemberURLs(rctx)
	}
	cancel()
	if err != nil {
		r.log().Warn("shard: the owners are not known; rendering the other owners' clusters", "replica", s.member.ID(), "error", redact.Text(err.Error()))
		return nil
	}
	var jobs []fetchJob
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
		jobs = append(jobs, fetchJob{c, owner, u})
	}
	return jobs
}

// fetchCluster fetches the files names of st that the work directory lacks
// from the owner at base (api.Client.Objects, which checks each against its
// digest) and stores them; an error, and nothing more stored, at the first
// that is not the digest st gives it, or beyond the bounds. It returns the
// bytes stored.
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
	u, err := url.Parse(base)
	if err != nil {
		return 0, err
	}
	client := &api.Client{Base: u, Token: string(r.APIToken), HTTP: fetchClient}
	var total, batchSize int64
	var batch [][]byte
	flush := func() error {
		err := r.Loop.Workdir.PutObjects(batch)
		batch, batchSize = nil, 0
		return err
	}
	err = client.Objects(ctx, sums, fetchMaxFile, fetchTimeout, func(_ string, data []byte) error {
		n := int64(len(data))
		if total += n; total > fetchMaxCluster {
			return fmt.Errorf("the cluster's files are over the bound of %d bytes", fetchMaxCluster)
		}
		batch, batchSize = append(batch, data), batchSize+n
		if batchSize >= fetchBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return total, nil
}
