package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runLocked runs the CLI once; run is not safe for concurrent use (see badRunMu).
func runLocked(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	badRunMu.Lock()
	code = run(append([]string{"fuelsync"}, args...), &out, &errOut)
	badRunMu.Unlock()
	return code, out.String(), errOut.String()
}

// The component registry of the real Fuel 9.x release: its 14 components plus the
// components of the plugins compatible with it, each with the API's keys only.
func TestComponentsMitaka(t *testing.T) {
	repo := filepath.Join("..", "..", "examples", "fuel-mitaka")
	code, stdout, stderr := runLocked("--repo", repo, "components", "--release", "mitaka-9.0", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var doc struct {
		FormatVersion string                       `json:"format_version"`
		Components    []map[string]json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	api := []string{"name", "label", "description", "weight", "default", "compatible", "incompatible", "requires"}
	var fromRelease, fromPlugins []string
	for _, c := range doc.Components {
		var name string
		json.Unmarshal(c["name"], &name)
		for k := range c {
			if !slices.Contains(api, k) && k != "plugin" {
				t.Errorf("component %s has key %q, not one of the API's", name, k)
			}
		}
		if _, ok := c["plugin"]; ok {
			fromPlugins = append(fromPlugins, name)
		} else {
			fromRelease = append(fromRelease, name)
		}
	}
	if doc.FormatVersion != "1" || len(fromRelease) != 14 {
		t.Errorf("format_version %q, %d release components; want 1 and 14: %v", doc.FormatVersion, len(fromRelease), fromRelease)
	}
	if diff := cmp.Diff([]string{"network:neutron:contrail", "network:neutron:ml2:dvs"}, fromPlugins); diff != "" {
		t.Errorf("plugin components (-want +got):\n%s", diff)
	}
}

// With a cluster: a disabled component says why; a component whose compatible list
// the selection satisfies has the green light.
func TestComponentsMitakaCluster(t *testing.T) {
	repo := filepath.Join("..", "..", "examples", "fuel-mitaka")
	if _, err := os.Stat(repo); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runLocked("--repo", repo, "--format", "json", "components", "--cluster", "mitaka")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var doc struct {
		Valid      *bool `json:"valid"`
		Components []struct {
			Name   string `json:"name"`
			Status struct {
				State      string `json:"state"`
				Reason     string `json:"reason"`
				Compatible bool   `json:"compatible"`
			} `json:"status"`
		} `json:"components"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Valid == nil || !*doc.Valid {
		t.Errorf("valid = %v, want true", doc.Valid)
	}
	got := map[string]string{}
	for _, c := range doc.Components {
		s := c.Status.State
		if c.Status.Reason != "" {
			s += ": " + c.Status.Reason
		}
		if c.Status.Compatible {
			s += " (compatible)"
		}
		got[c.Name] = s
	}
	for name, want := range map[string]string{
		"hypervisor:qemu":          "selected (compatible)",
		"network:neutron:ml2:vlan": "selected (compatible)",
		"storage:block:lvm":        "selected (compatible)",
		"storage:block:ceph":       "disabled: Incompatible components were found: 'storage:block:ceph' incompatible with ['storage:block:lvm']. Ceph not compatible with LVM",
		"network:neutron:ml2:dvs":  "disabled: Component 'network:neutron:ml2:dvs' requires any of components from ['hypervisor:vmware'] set. The VMware DVS plugin requires vCenter as the hypervisor option.",
	} {
		if got[name] != want {
			t.Errorf("%s: got %q, want %q", name, got[name], want)
		}
	}
}
