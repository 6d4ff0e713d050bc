package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/state"
)

// The limits of serve. A webhook is only a nudge (the loop fetches the newest
// commit whatever the delivery says), so a refused or lost delivery costs at most
// an interval's delay, and everything an unauthenticated client can make the
// server hold is bounded here.
const (
	// MaxWebhookBody is the largest webhook body accepted (413 above).
	MaxWebhookBody = 1 << 20
	// MaxDeliveryID is the longest delivery id accepted (400 above); providers'
	// ids are 36-character UUIDs.
	MaxDeliveryID = 128
	// MaxSeenDeliveries is how many delivery ids are remembered for dedupe; the
	// oldest is forgotten first.
	MaxSeenDeliveries = 10000
	// DeliveryRetention is how long a delivery id is remembered (at most).
	DeliveryRetention = 24 * time.Hour
	// ReplayWindow is how far a generic delivery's timestamp may be from the
	// server's clock, either way (401 outside).
	ReplayWindow = 5 * time.Minute
	// MaxBodyReads is how many webhook bodies are read at once; a delivery
	// beyond it is answered 503 at once, before its body is read.
	MaxBodyReads = 16
)

// Server is the HTTP side of serve: webhooks that trigger the loop, health,
// status, metrics and the status page.
type Server struct {
	Loop   *controller.Loop
	Secret []byte
	// APIToken, when set, is the bearer token the read API (the artifact API
	// and the component registry) asks for; the status, the page, the probes
	// and the metrics stay open.
	APIToken []byte
	// MaxWait is the longest wait of a long-poll (?wait=); longer ones are
	// shortened to it. MaxWaiting is how many requests may wait at once (429
	// beyond). Both are read by Handler.
	MaxWait    time.Duration
	MaxWaiting int
	// Replica, when set, is the replica this server is one of (serve on a
	// state on etcd): the status names its role and the leader, a follower
	// hands webhooks to the leader, and is ready once it serves the applied
	// set, rendered and checked itself.
	Replica *controller.Replica
	// AgentSecret, when set, is the secret the nodes' tokens are derived
	// from (reports.Token): a node reports with its own token, and reads its
	// own graphs with it too. Without it, no report is taken.
	AgentSecret []byte
	// ReportRate and ReportBytes bound what one node writes (see
	// nodeAllowed, chargeReport): its requests, and the bytes its reports
	// write to the state backend. Read by Handler.
	ReportRate, ReportBytes Rate
	// RunRate bounds the requests of a node's agent to the runs API (its
	// next task, its task reports), apart from its graph reports.
	RunRate Rate

	nodeRate, nodeBytes, runRate *nodeBuckets

	// Runs, when set, coordinates the deployments (serve with
	// --agent-secret-file): the runs API and the agents' tasks.
	Runs *runs.Coordinator

	// notes, when set, sends the server's events (EnableNotifications).
	notes *notifications

	autoMu   sync.Mutex    // one autoDeploy at a time
	autoDone atomic.Value  // the autoPass of autoDeploy's last whole pass
	autoKick chan struct{} // asks for autoDeploy (after an apply)

	keptMu sync.Mutex
	kept   map[int64]*state.State // the kept applied sets' states (keptState)

	index        artifactIndex
	waiters      chan struct{} // requests waiting (MaxWaiting)
	writeTimeout time.Duration // pushed past a wait

	metrics Metrics

	reads chan struct{} // webhook bodies being read (MaxBodyReads)

	mu    sync.Mutex
	seen  map[string]time.Time // delivery ids, for duplicates
	order []seenID             // the ids of seen, oldest first

	compMu sync.Mutex
	comp   componentsCache

	// trigger asks the loop for a reconcile (Loop.Trigger; the webhook
	// tests count the calls).
	trigger func()
}

type seenID struct {
	id string
	at time.Time
}

// componentsCache holds the component-registry API of one loaded revision,
// release by release, as JSON.
type componentsCache struct {
	repo *loader.Repo
	json map[*loader.Release][]byte
}

// NewServer makes the server of loop; it sets loop.OnReconcile for the metrics.
// An empty secret refuses every delivery.
func New(loop *controller.Loop, secret []byte) *Server {
	s := &Server{Loop: loop, Secret: secret, seen: map[string]time.Time{},
		reads: make(chan struct{}, MaxBodyReads), MaxWait: DefaultMaxWait, MaxWaiting: DefaultMaxWaiting,
		ReportRate: DefaultReportRate, ReportBytes: DefaultReportBytes, RunRate: DefaultRunRate,
		writeTimeout: DefaultLimits.WriteTimeout, trigger: loop.Trigger}
	if loop.Log == nil {
		loop.Log = slog.New(slog.DiscardHandler) // the webhooks log to it from the start
	}
	s.metrics = newMetrics(Gauges{
		Build:   Build{Version: loop.ToolVersion, Revision: loop.ToolCommit, GoVersion: runtime.Version()},
		Serial:  func() float64 { return float64(loop.Status().Serial) },
		Waiting: func() float64 { return float64(len(s.waiters)) },
		Clusters: func() []operation.ClusterInfo {
			st, err := s.applied()
			if err != nil {
				return nil
			}
			return loop.Clusters(st)
		},
		LastApplied: loop.LastApplied,
	})
	if loop.Reports == nil && loop.Workdir != nil {
		loop.Reports = reports.NewWorkdirStore(loop.Workdir)
	}
	loop.OnReconcile = s.metrics.Reconciled
	loop.OnState = s.reconciled
	return s
}

// reconciled is told the applied state at the end of each reconcile
// (Loop.OnState): it observes it, and kicks the automatic runs, whose
// decision needs the loop's model of that commit, recorded only now (a
// request that read the new state earlier kicked them before the model).
func (s *Server) reconciled(st *state.State) {
	s.observe(st)
	_, rev := s.Loop.Model()
	if done, _ := s.autoDone.Load().(autoPass); done != (autoPass{st.Serial, rev}) {
		s.kickAutoDeploy()
	}
}

// autoPass is what a pass of autoDeploy decided with: the applied serial and
// the revision of the loop's model.
type autoPass struct {
	serial int64
	rev    string
}

// Handler routes the server's endpoints.
func (s *Server) Handler() http.Handler {
	s.waiters = make(chan struct{}, max(s.MaxWaiting, 0))
	s.nodeRate, s.nodeBytes = newNodeBuckets(s.ReportRate), newNodeBuckets(s.ReportBytes)
	s.runRate = newNodeBuckets(s.RunRate)
	mux := http.NewServeMux()
	for _, p := range []string{"github", "gitlab", "gitea", "generic"} {
		mux.HandleFunc("/hooks/"+p, func(w http.ResponseWriter, r *http.Request) { s.hook(p, w, r) })
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ready, err := s.readiness(r.Context(), s.replicaStatus(r.Context()))
		if err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, ready+"\n")
	})
	// /leaderz: 200 on the serve that coordinates the deployments (the
	// leader of replicas, or a serve alone), 503 elsewhere: the health check
	// of a load balancer that sends the agents to the leader.
	mux.HandleFunc("/leaderz", func(w http.ResponseWriter, r *http.Request) {
		if s.Replica != nil && s.Replica.Role() != controller.RoleLeader {
			http.Error(w, "following: the leader coordinates the deployments", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "leading\n")
	})
	mux.HandleFunc("/api/v1/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.status(r.Context()))
	})
	mux.Handle("/metrics", s.metrics.Handler())
	mux.HandleFunc("GET /api/v1/releases/{version}/components", func(w http.ResponseWriter, r *http.Request) {
		if s.authorized(w, r) {
			s.components(w, r)
		}
	})
	mux.HandleFunc("GET /api/v1/clusters", s.clusters)
	mux.HandleFunc("GET /api/v1/clusters/{cluster}", s.cluster)
	mux.HandleFunc("POST /api/v1/clusters/{cluster}/approve", s.approve)
	mux.HandleFunc("GET /api/v1/clusters/{cluster}/plan", s.plan)
	mux.HandleFunc("GET /api/v1/clusters/{cluster}/nodes/{node}/graphs/{graph}", s.graph)
	mux.HandleFunc("POST /api/v1/clusters/{cluster}/nodes/{node}/reports", s.report)
	mux.HandleFunc("GET /api/v1/clusters/{cluster}/nodes/{node}", s.node)
	mux.HandleFunc("POST /api/v1/objects", s.objects)
	mux.HandleFunc("GET /api/v1/clusters/{cluster}/nodes/{node}/tasks/next", s.nextTask)
	mux.HandleFunc("POST /api/v1/clusters/{cluster}/nodes/{node}/runs/{run}/tasks", s.taskReport)
	mux.HandleFunc("GET /api/v1/clusters/{cluster}/runs", s.listRuns)
	mux.HandleFunc("POST /api/v1/clusters/{cluster}/runs", s.startRun)
	mux.HandleFunc("POST /api/v1/clusters/{cluster}/runs/retry", s.retryRun)
	mux.HandleFunc("POST /api/v1/clusters/{cluster}/runs/stop", s.stopRun)
	mux.HandleFunc("GET /api/v1/clusters/{cluster}/runs/{id}", s.getRun)
	mux.HandleFunc("GET /api/v1/clusters/{cluster}/runs/{id}/output", s.runOutput)
	mux.HandleFunc("/{$}", s.page)
	mux.HandleFunc("GET /clusters/{cluster}", s.clusterPage)
	mux.HandleFunc("GET /clusters/{cluster}/nodes/{node}", s.nodePage)
	mux.HandleFunc("GET /clusters/{cluster}/runs/{id}", s.runPage)
	return securityHeaders(mux)
}

// SecurityHeaders are the headers of every answer of serve, page or API,
// success or error: the pages load nothing but their inline style (no
// script, no other origin), no page may be framed (clickjacking), and no
// answer is sniffed as another type than it says.
var SecurityHeaders = [][2]string{
	{"Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"},
	{"X-Frame-Options", "DENY"},
	{"X-Content-Type-Options", "nosniff"},
	{"Referrer-Policy", "no-referrer"},
}

// securityHeaders sets SecurityHeaders on every answer of h.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, kv := range SecurityHeaders {
			w.Header().Set(kv[0], kv[1])
		}
		h.ServeHTTP(w, r)
	})
}

// replicaStatus is this replica's part of the status (nil for a server that
// is no replica).
func (s *Server) replicaStatus(ctx context.Context) *controller.ReplicaStatus {
	if s.Replica == nil {
		return nil
	}
	return s.Replica.Status(ctx)
}

// status is the loop's status as the server tells it: with this replica's
// role and the leader, and ready as /readyz says, with why not.
func (s *Server) status(ctx context.Context) controller.Status {
	st := s.Loop.Status()
	st.Replica = s.replicaStatus(ctx)
	_, err := s.readiness(ctx, st.Replica)
	st.Ready, st.ReadyError = err == nil, ""
	if err != nil {
		st.ReadyError = err.Error()
	}
	return st
}

// readiness is whether this server is ready, the one answer of /readyz, the
// status and the page: what it serves when it is ("ready", "ready (follower,
// serving serial 3)"), else why it is not. rs is this replica's status (nil
// for a server that is no replica). A replica that cannot read the election
// is cut from the state: it neither reconciles nor sees new commits. A
// server whose state backend refuses writes (etcd's NOSPACE alarm, a write
// that failed) takes no report and applies nothing. A
// follower is ready once it serves the committed serial, rendered and
// checked itself; a leader, or a server that is no replica, after its first
// successful reconcile.
func (s *Server) readiness(ctx context.Context, rs *controller.ReplicaStatus) (string, error) {
	if rs != nil {
		switch {
		case rs.Error != "":
			return "", errors.New("the state on etcd is out of reach: " + rs.Error)
		case rs.Leader == "" && rs.Role != controller.RoleShard: // shards have no leader
			return "", errors.New("no replica leads")
		}
	}
	if s.Loop.Reports != nil {
		if err := s.Loop.Reports.Writable(ctx); err != nil {
			return "", errors.New("the state backend refuses writes: " + redact.Text(err.Error()))
		}
	}
	if rs != nil && rs.Role != controller.RoleLeader {
		switch {
		case rs.Problem != "":
			return "", errors.New("a follower that does not serve the applied state: " + rs.Problem)
		case rs.Serving == 0:
			return "", errors.New("a follower that has not rendered the applied set yet (or nothing is applied)")
		}
		ctx, cancel := context.WithTimeout(ctx, controller.StatusTimeout)
		committed, err := s.Replica.Etcd.CommittedSerial(ctx)
		cancel()
		if err != nil {
			return "", errors.New("the state on etcd is out of reach: " + redact.Text(err.Error()))
		}
		if rs.Serving < committed {
			return "", fmt.Errorf("a follower serving serial %d while serial %d is committed (rendering it)", rs.Serving, committed)
		}
		return fmt.Sprintf("ready (%s, serving serial %d)", rs.Role, rs.Serving), nil
	}
	if !s.Loop.Status().Ready {
		return "", errors.New("no successful reconcile yet")
	}
	return "ready", nil
}

// Push is what fuelsync reads of a push event: its ref and new commit (each
// provider's payload has them under these names). Neither is needed: the loop
// fetches the newest commit of its branch whatever the event says.
type Push struct {
	Ref   string `json:"ref"`
	After string `json:"after"`
}

// ParsePush reads a webhook payload; a body that is not a JSON object is an error.
func ParsePush(body []byte) (Push, error) {
	var p Push
	if len(strings.TrimSpace(string(body))) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return Push{}, err
	}
	return p, nil
}

// signatureHeader is the header that authenticates a provider's deliveries.
func signatureHeader(provider string) string {
	switch provider {
	case "github":
		return "X-Hub-Signature-256"
	case "gitlab":
		return "X-Gitlab-Token"
	case "gitea":
		return "X-Gitea-Signature"
	}
	return "X-Fuelsync-Signature"
}

// hook handles one delivery. What costs nothing is checked before the body is
// read (checkDelivery); then at most MaxBodyReads bodies are read at once,
// each up to MaxWebhookBody, and checked (readDelivery); then the duplicate,
// and 202 and a trigger (answerDelivery).
func (s *Server) hook(provider string, w http.ResponseWriter, r *http.Request) {
	result, code := "accepted", http.StatusAccepted
	id := deliveryID(provider, r.Header)
	defer func() {
		s.metrics.Delivered(provider, result)
		s.logDelivery(provider, result, code, id)
	}()
	refuse := func(no *refusal) {
		result, code = no.result, no.code
		if no.unread {
			w.Header().Set("Connection", "close") // the body is left unread
		}
		http.Error(w, no.msg, no.code)
	}
	stamp, no := s.checkDelivery(provider, id, w, r)
	if no != nil {
		refuse(no)
		return
	}
	select {
	case s.reads <- struct{}{}:
		defer func() { <-s.reads }()
	default:
		w.Header().Set("Retry-After", "1")
		refuse(&refusal{"busy", http.StatusServiceUnavailable, "too many deliveries at once; retry", true})
		return
	}
	if no := s.readDelivery(provider, stamp, w, r); no != nil {
		refuse(no)
		return
	}
	result, code = s.answerDelivery(provider, id, w)
}

// refusal is a delivery refused: its result (the metric's), its HTTP status
// and message, and whether its body is left unread (the connection is
// closed).
type refusal struct {
	result string
	code   int
	msg    string
	unread bool
}

// checkDelivery checks what costs nothing, before the body is read: the
// method, the secret, the signature header's presence, the delivery id's
// length and the generic timestamp, which it returns.
func (s *Server) checkDelivery(provider, id string, w http.ResponseWriter, r *http.Request) (stamp string, no *refusal) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return "", &refusal{"method_not_allowed", http.StatusMethodNotAllowed, "webhooks are POST", false}
	}
	if len(s.Secret) == 0 {
		return "", &refusal{"unauthorized", http.StatusUnauthorized, "no webhook secret is configured: every delivery is refused", true}
	}
	if r.Header.Get(signatureHeader(provider)) == "" {
		return "", &refusal{"unauthorized", http.StatusUnauthorized, "no " + signatureHeader(provider) + " header", true}
	}
	if len(id) > MaxDeliveryID {
		return "", &refusal{"bad_request", http.StatusBadRequest, fmt.Sprintf("delivery id over %d bytes", MaxDeliveryID), true}
	}
	if provider == "generic" {
		stamp = r.Header.Get("X-Fuelsync-Timestamp")
		if err := checkTimestamp(stamp, time.Now()); err != nil {
			return "", &refusal{"unauthorized", http.StatusUnauthorized, err.Error(), true}
		}
	}
	return stamp, nil
}

// readDelivery reads the body, up to MaxWebhookBody, and checks its
// signature and that it is JSON.
func (s *Server) readDelivery(provider, stamp string, w http.ResponseWriter, r *http.Request) *refusal {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &refusal{"too_large", http.StatusRequestEntityTooLarge, "body over 1 MiB", false}
	}
	if err != nil {
		return &refusal{"bad_request", http.StatusBadRequest, "reading the body: " + err.Error(), false}
	}
	if !s.authentic(provider, r.Header, stamp, body) {
		return &refusal{"unauthorized", http.StatusUnauthorized, "bad signature", false}
	}
	if _, err := ParsePush(body); err != nil {
		return &refusal{"bad_request", http.StatusBadRequest, "the payload is not JSON: " + err.Error(), false}
	}
	return nil
}

// answerDelivery answers an authentic delivery: 200 for a duplicate, or 202
// and a reconcile asked (of the leader, through etcd, on a follower).
func (s *Server) answerDelivery(provider, id string, w http.ResponseWriter) (result string, code int) {
	if id != "" && s.duplicate(provider+"/"+id) {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "duplicate delivery, ignored\n")
		return "duplicate", http.StatusOK
	}
	w.WriteHeader(http.StatusAccepted)
	if s.Replica == nil {
		io.WriteString(w, "accepted: reconciling\n")
		s.trigger()
		return "accepted", http.StatusAccepted
	}
	if err := s.Replica.Trigger(); err != nil {
		// The leader polls every interval: the change is late, not lost.
		io.WriteString(w, "accepted, but the leader could not be asked to reconcile now: "+redact.Text(err.Error())+"\n")
		return "accepted", http.StatusAccepted
	}
	io.WriteString(w, "accepted: reconciling ("+s.Replica.Role()+")\n")
	return "accepted", http.StatusAccepted
}

// logDelivery logs one webhook delivery ("webhook delivery"): its provider,
// result (as the metric's), HTTP status and delivery id; at info level when
// accepted or a duplicate, at warn level when refused. Nothing of its
// signature, token or body is logged; an id (an unauthenticated request's,
// when refused) is cut to MaxDeliveryID bytes, its length said, and escaped
// to one line.
func (s *Server) logDelivery(provider, result string, code int, id string) {
	log := s.Loop.Log
	if log == nil {
		return
	}
	attrs := []any{"provider", provider, "result", result, "status", code}
	if id != "" {
		if len(id) > MaxDeliveryID {
			attrs = append(attrs, "delivery_bytes", len(id))
			cut := MaxDeliveryID
			for cut > 0 && !utf8.RuneStart(id[cut]) {
				cut--
			}
			id = id[:cut] + "…"
		}
		attrs = append(attrs, "delivery", safetext.Line(id))
	}
	level := slog.LevelWarn
	if result == "accepted" || result == "duplicate" {
		level = slog.LevelInfo
	}
	log.Log(context.Background(), level, "webhook delivery", attrs...)
}

// checkTimestamp refuses a generic delivery's X-Fuelsync-Timestamp (Unix seconds)
// when it is missing or further than ReplayWindow from now.
func checkTimestamp(stamp string, now time.Time) error {
	if stamp == "" {
		return errors.New("no X-Fuelsync-Timestamp header")
	}
	sec, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return errors.New("X-Fuelsync-Timestamp is not Unix seconds")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > ReplayWindow || d < -ReplayWindow {
		return fmt.Errorf("X-Fuelsync-Timestamp is %v away from the server's clock (the replay window is %v)", d.Round(time.Second), ReplayWindow)
	}
	return nil
}

// authentic checks the delivery's signature (or token) against the secret, in
// constant time. An empty secret authenticates nothing.
func (s *Server) authentic(provider string, h http.Header, stamp string, body []byte) bool {
	if len(s.Secret) == 0 {
		return false
	}
	mac := hmac.New(sha256.New, s.Secret)
	mac.Write(body)
	sum := hex.EncodeToString(mac.Sum(nil))
	switch provider {
	case "github":
		return hmac.Equal([]byte(h.Get("X-Hub-Signature-256")), []byte("sha256="+sum))
	case "generic":
		return hmac.Equal([]byte(h.Get("X-Fuelsync-Signature")), []byte(api.Sign(s.Secret, stamp, body)))
	case "gitea":
		return hmac.Equal([]byte(h.Get("X-Gitea-Signature")), []byte(sum))
	case "gitlab":
		return subtle.ConstantTimeCompare([]byte(h.Get("X-Gitlab-Token")), s.Secret) == 1
	}
	return false
}

func deliveryID(provider string, h http.Header) string {
	switch provider {
	case "github":
		return h.Get("X-GitHub-Delivery")
	case "gitlab":
		return h.Get("X-Gitlab-Event-UUID")
	case "gitea":
		return h.Get("X-Gitea-Delivery")
	}
	return h.Get("X-Fuelsync-Delivery")
}

// duplicate records id and reports whether it was seen: ids are remembered for
// DeliveryRetention, and at most MaxSeenDeliveries of them (the oldest is
// forgotten first).
func (s *Server) duplicate(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	forgetOldest := func() {
		delete(s.seen, s.order[0].id)
		s.order[0] = seenID{}
		s.order = s.order[1:]
	}
	for len(s.order) > 0 && now.Sub(s.order[0].at) >= DeliveryRetention {
		forgetOldest()
	}
	if _, ok := s.seen[id]; ok {
		return true
	}
	if len(s.order) >= MaxSeenDeliveries {
		forgetOldest()
	}
	s.seen[id] = now
	s.order = append(s.order, seenID{id, now})
	return false
}

// components is the component-registry API of the design: the release's
// components and those of the plugins compatible with it, from the revision the
// loop loaded last (on a follower, the applied revision it serves). Nothing is
// fetched or loaded per request: the JSON of each release is made once per
// loaded revision.
func (s *Server) components(w http.ResponseWriter, r *http.Request) {
	repo, rev := s.Loop.Model()
	if s.Replica != nil && s.Replica.Role() != controller.RoleLeader {
		// A follower's loop loads nothing: the applied revision it serves.
		var err error
		if repo, rev, err = s.Replica.Model(r.Context()); err != nil {
			http.Error(w, "the applied revision does not load here: "+redact.Text(err.Error()), http.StatusServiceUnavailable)
			return
		}
	}
	if repo == nil {
		http.Error(w, "no revision loaded yet", http.StatusServiceUnavailable)
		return
	}
	version := r.PathValue("version")
	s.compMu.Lock()
	defer s.compMu.Unlock()
	if s.comp.repo != repo {
		s.comp = componentsCache{repo: repo, json: map[*loader.Release][]byte{}}
	}
	rels := repo.FindRelease(version)
	if len(rels) != 1 {
		http.Error(w, fmt.Sprintf("no release %q at %.12s", version, rev), http.StatusNotFound)
		return
	}
	body, ok := s.comp.json[rels[0]]
	if !ok {
		reg, diags := render.Registry(repo, rels[0])
		if reg == nil || diags.HasErrors() {
			http.Error(w, fmt.Sprintf("the component registry of %s does not load at %.12s", version, rev), http.StatusInternalServerError)
			return
		}
		var err error
		if body, err = json.MarshalIndent(reg.API(), "", "  "); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		body = append(body, '\n')
		s.comp.json[rels[0]] = body // one entry per release, whatever name it is asked by
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}
