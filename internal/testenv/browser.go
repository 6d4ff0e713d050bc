package testenv

import (
	"os/exec"
	"testing"
)

// Browser returns the path of a headless-capable Chromium (chromium,
// chromium-browser or google-chrome on PATH), or ends t (Unavailable).
func Browser(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Unavailable(t, "no chromium installed (apt-get install chromium)")
	return ""
}
