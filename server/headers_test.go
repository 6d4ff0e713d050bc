package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/operation"
)

// TestSecurityHeaders: every answer of serve, page or API, success or error,
// carries one set of security headers: a Content-Security-Policy that loads
// nothing but inline style and lets no page frame it, X-Frame-Options DENY
// and X-Content-Type-Options nosniff. The status page (/) had no policy, and
// no page forbade framing or sniffing.
func TestSecurityHeaders(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.AgentSecret = agentSecret })
	a.reconcile(t, operation.Applied)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/"},
		{"GET", "/clusters/demo"},
		{"GET", "/clusters/demo/nodes/node-2"},
		{"GET", "/clusters/nope"},
		{"GET", "/healthz"},
		{"GET", "/readyz"},
		{"GET", "/metrics"},
		{"GET", "/api/v1/status"},
		{"GET", "/api/v1/clusters"},
		{"GET", "/api/v1/clusters/demo"},
		{"GET", node2Graph},
		{"GET", "/api/v1/clusters/demo/nodes/node-2"},
		{"GET", "/api/v1/releases/nope/components"},
		{"POST", "/api/v1/clusters/demo/nodes/node-2/reports"},
		{"POST", "/api/v1/objects"},
		{"GET", "/hooks/github"},
		{"GET", "/no/such/page"},
	} {
		req, err := http.NewRequest(tc.method, a.base+tc.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s (%d): Content-Security-Policy %q, X-Frame-Options %q, X-Content-Type-Options %q",
				tc.method, tc.path, resp.StatusCode, csp, h.Get("X-Frame-Options"), h.Get("X-Content-Type-Options"))
		}
		if n := len(h.Values("Content-Security-Policy")); n != 1 {
			t.Errorf("%s %s: %d Content-Security-Policy headers, want 1", tc.method, tc.path, n)
		}
	}
}
