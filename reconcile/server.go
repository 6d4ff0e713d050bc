package reconcile

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// MaxWebhookBody is the largest webhook body accepted (SPEC §9: 413 above).
const MaxWebhookBody = 1 << 20

// Server is the HTTP side of serve (SPEC §9): webhooks that trigger the loop,
// health, status, metrics and the status page.
type Server struct {
	Loop   *Loop
	Secret []byte

	registry   *prometheus.Registry
	reconciles *prometheus.CounterVec
	duration   prometheus.Histogram
	deliveries *prometheus.CounterVec
	serial     prometheus.GaugeFunc

	mu   sync.Mutex
	seen map[string]time.Time // delivery ids, for duplicates
}

// NewServer makes the server of loop; it sets loop.OnReconcile for the metrics.
func NewServer(loop *Loop, secret []byte) *Server {
	s := &Server{Loop: loop, Secret: secret, registry: prometheus.NewRegistry(), seen: map[string]time.Time{}}
	s.reconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fuelsync_reconciles_total", Help: "Reconciles by outcome.",
	}, []string{"outcome"})
	s.duration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fuelsync_reconcile_duration_seconds", Help: "How long reconciles take.",
	})
	s.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fuelsync_webhook_deliveries_total", Help: "Webhook deliveries by provider and result.",
	}, []string{"provider", "result"})
	s.serial = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fuelsync_applied_serial", Help: "The serial of the applied state.",
	}, func() float64 { return float64(loop.Status().Serial) })
	s.registry.MustRegister(s.reconciles, s.duration, s.deliveries, s.serial)
	loop.OnReconcile = func(o Outcome, d time.Duration) {
		s.reconciles.WithLabelValues(string(o)).Inc()
		s.duration.Observe(d.Seconds())
	}
	return s
}

// Handler routes the server's endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, p := range []string{"github", "gitlab", "gitea", "generic"} {
		mux.HandleFunc("/hooks/"+p, func(w http.ResponseWriter, r *http.Request) { s.hook(p, w, r) })
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !s.Loop.Status().Ready {
			http.Error(w, "not ready: no successful reconcile yet", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	mux.HandleFunc("/api/v1/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Loop.Status())
	})
	mux.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/v1/releases/{version}/components", s.components)
	mux.HandleFunc("/{$}", s.page)
	return mux
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

// hook handles one delivery: method, size, signature, duplicate, then 202 and a
// trigger.
func (s *Server) hook(provider string, w http.ResponseWriter, r *http.Request) {
	result := "accepted"
	defer func() { s.deliveries.WithLabelValues(provider, result).Inc() }()
	if r.Method != http.MethodPost {
		result = "method_not_allowed"
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		result = "too_large"
		http.Error(w, "body over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	if err != nil {
		result = "bad_request"
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !s.authentic(provider, r.Header, body) {
		result = "unauthorized"
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if _, err := ParsePush(body); err != nil {
		result = "bad_request"
		http.Error(w, "the payload is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	if id := deliveryID(provider, r.Header); id != "" && s.duplicate(provider+"/"+id) {
		result = "duplicate"
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "duplicate delivery, ignored\n")
		return
	}
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, "accepted: reconciling\n")
	s.Loop.Trigger()
}

// authentic checks the delivery's signature (or token) against the secret, in
// constant time.
func (s *Server) authentic(provider string, h http.Header, body []byte) bool {
	mac := hmac.New(sha256.New, s.Secret)
	mac.Write(body)
	sum := hex.EncodeToString(mac.Sum(nil))
	switch provider {
	case "github":
		return hmac.Equal([]byte(h.Get("X-Hub-Signature-256")), []byte("sha256="+sum))
	case "generic":
		return hmac.Equal([]byte(h.Get("X-Fuelsync-Signature")), []byte("sha256="+sum))
	case "gitea":
		return hmac.Equal([]byte(h.Get("X-Gitea-Signature")), []byte(sum))
	case "gitlab":
		token := []byte(h.Get("X-Gitlab-Token"))
		return len(s.Secret) > 0 && subtle.ConstantTimeCompare(token, s.Secret) == 1
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

// duplicate records id and reports whether it was seen in the last day.
func (s *Server) duplicate(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if t, ok := s.seen[id]; ok && now.Sub(t) < 24*time.Hour {
		return true
	}
	if len(s.seen) > 10000 {
		for k, t := range s.seen {
			if now.Sub(t) > time.Hour {
				delete(s.seen, k)
			}
		}
	}
	s.seen[id] = now
	return false
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>fuelsync</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}.error{color:#b00}pre{background:#f6f6f6;padding:.6em}</style>
</head><body>
<h1>fuelsync</h1>
<p>Newest commit: <code>{{.Revision}}</code>. Applied: <code>{{.Applied}}</code> (serial {{.Serial}}).
{{if not .LastReconcile.IsZero}}Last reconcile: {{.LastReconcile.Format "2006-01-02 15:04:05 MST"}}, {{.Outcome}}.{{end}}</p>
{{if .Errors}}<h2 class="error">Errors</h2><ul class="error">{{range .Errors}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
{{if .Changes}}<h2>Last change set</h2><pre>{{.Changes.Text .NoColors}}</pre>{{end}}
<h2>Clusters</h2>
{{range .Clusters}}<h3>{{.Name}}</h3>
<table><tr><th>node</th><th>id</th><th>roles</th><th>tags</th></tr>
{{range .Nodes}}<tr><td>{{.Name}}</td><td>{{.ID}}</td><td>{{range $i, $r := .Roles}}{{if $i}}, {{end}}{{$r}}{{end}}</td><td>{{range $i, $t := .Tags}}{{if $i}}, {{end}}{{$t}}{{end}}</td></tr>
{{end}}</table>
{{else}}<p>No cluster rendered yet.</p>{{end}}
</body></html>
`))

// components is the component-registry API of the design: the release's
// components and those of the plugins compatible with it, read from the newest
// commit of the branch.
func (s *Server) components(w http.ResponseWriter, r *http.Request) {
	rev, err := s.Loop.Source.Latest(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	repo, _ := loader.Load(rev.FS, loader.Options{})
	version := r.PathValue("version")
	rels := repo.FindRelease(version)
	if len(rels) != 1 {
		http.Error(w, fmt.Sprintf("no release %q at %.12s", version, rev.SHA), http.StatusNotFound)
		return
	}
	reg, diags := render.Registry(repo, rels[0])
	if reg == nil || diags.HasErrors() {
		http.Error(w, fmt.Sprintf("the component registry of %s does not load at %.12s", version, rev.SHA), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(reg.API())
}

// page is the status page: server-rendered, no JavaScript.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	st := s.Loop.Status()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = pageTemplate.Execute(w, struct {
		Status
		NoColors diff.Colors
	}{st, diff.Colors{}})
}
