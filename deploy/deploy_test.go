package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// TestSystemdUnits checks every unit of systemd/ (serve's and the agent's)
// with systemd-analyze verify, which must print nothing: no unknown key, no
// bad value, no missing executable (the units' /usr/local/bin is pointed at
// stand-ins here). Then the units must stay hardened: the settings the
// production page promises are there, and systemd-analyze security
// --offline rates the service's exposure at most 2.0 (of 10).
func TestSystemdUnits(t *testing.T) {
	analyze := testenv.Tool(t, "systemd-analyze", "Debian: apt-get install systemd")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"fuelsync", "fuelsync-server"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	units, err := filepath.Glob(filepath.Join("systemd", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fuelsync-serve.service", "fuelsync-agent.service"} {
		if !slices.Contains(units, filepath.Join("systemd", want)) {
			t.Errorf("units: %v; no %s", units, want)
		}
	}
	for _, u := range units {
		name := strings.TrimSuffix(filepath.Base(u), ".example")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(u)
			if err != nil {
				t.Fatal(err)
			}
			text := string(src)
			for _, want := range []string{"DynamicUser=yes", "NoNewPrivileges=yes", "ProtectSystem=strict", "StateDirectory=", "Restart=", "CapabilityBoundingSet=\n"} {
				if !strings.Contains(text, "\n"+want) {
					t.Errorf("%s has no %s", u, strings.TrimSpace(want))
				}
			}
			if strings.HasSuffix(u, ".example") && !strings.HasPrefix(text, "# EXAMPLE ONLY") {
				t.Errorf("%s does not start by saying it is an example", u)
			}
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "/usr/local/bin/", bin+"/")), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(analyze, "verify", p).CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
			}
			out, err = exec.Command(analyze, "security", "--offline=true", "--no-pager", p).CombinedOutput()
			if err != nil {
				t.Fatalf("systemd-analyze security --offline=true %s: %v\n%s", u, err, out)
			}
			m := regexp.MustCompile(`Overall exposure level for \S+: (\d+\.\d+)`).FindSubmatch(out)
			if m == nil {
				t.Fatalf("systemd-analyze security: no exposure level in:\n%s", out)
			}
			if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
				t.Errorf("%s: exposure level %.1f, want at most 2.0:\n%s", u, level, out)
			}
		})
	}
}
