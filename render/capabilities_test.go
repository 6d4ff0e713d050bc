package render

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/loader"
)

// TestTripleoCapabilities: examples/tripleo-capabilities resolves each cluster's
// registry by its requires: the docker pacemaker templates for {deployment:
// docker, ha: pacemaker}, the puppet ones for puppet; Keystone (no candidate
// declares ha) is not filtered by ha; the pinned Pacemaker stays puppet in docker;
// the docker templates' nested type: references to their puppet twins are left
// alone. registry.yaml is among the artifacts.
func TestTripleoCapabilities(t *testing.T) {
	repo, ld := loader.Load(os.DirFS("../examples/tripleo-capabilities"), loader.Options{})
	if ld.HasErrors() {
		t.Fatalf("load: %s", diagText(ld))
	}
	rs, diags := Render(repo, Options{})
	noErrors(t, diags)
	got := map[string]map[string]string{}
	for _, r := range rs {
		if r.Registry == nil {
			t.Fatalf("cluster %s has no registry", r.Model.Cluster.Name)
		}
		got[r.Model.Cluster.Name] = map[string]string{}
		for k, e := range r.Registry.Entries {
			got[r.Model.Cluster.Name][k] = e.Value
		}
	}
	common := func(m map[string]string) map[string]string {
		m["OS::TripleO::Services::Pacemaker"] = "tht/puppet/services/pacemaker.yaml"
		m["OS::TripleO::Services::PacemakerRemote"] = "OS::Heat::None"
		m["OS::TripleO::Server"] = "OS::Nova::Server"
		m["OS::TripleO::ControllerServer"] = "OS::TripleO::Server"
		return m
	}
	want := map[string]map[string]string{
		"docker-ha": common(map[string]string{
			"OS::TripleO::Services::RabbitMQ": "tht/docker/services/pacemaker/rabbitmq.yaml",
			"OS::TripleO::Services::HAproxy":  "tht/docker/services/pacemaker/haproxy.yaml",
			"OS::TripleO::Services::MySQL":    "tht/docker/services/pacemaker/database/mysql.yaml",
			"OS::TripleO::Services::Keystone": "tht/docker/services/keystone.yaml",
		}),
		"docker": common(map[string]string{
			"OS::TripleO::Services::RabbitMQ": "tht/docker/services/rabbitmq.yaml",
			"OS::TripleO::Services::HAproxy":  "tht/docker/services/haproxy.yaml",
			"OS::TripleO::Services::MySQL":    "tht/docker/services/database/mysql.yaml",
			"OS::TripleO::Services::Keystone": "tht/docker/services/keystone.yaml",
		}),
		"puppet": common(map[string]string{
			"OS::TripleO::Services::RabbitMQ": "tht/puppet/services/rabbitmq.yaml",
			"OS::TripleO::Services::HAproxy":  "tht/puppet/services/haproxy.yaml",
			"OS::TripleO::Services::MySQL":    "tht/puppet/services/database/mysql.yaml",
			"OS::TripleO::Services::Keystone": "tht/puppet/services/keystone.yaml",
		}),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registries (-want +got):\n%s", diff)
	}
	// The chosen docker pacemaker RabbitMQ nests its puppet twin (a template of
	// deployment: puppet): nested references are not registry entries, so nothing
	// filtered it.
	src, err := os.ReadFile("../examples/tripleo-capabilities/tht/docker/services/pacemaker/rabbitmq.yaml")
	if err != nil || !strings.Contains(string(src), "type: ../../../puppet/services/rabbitmq.yaml") {
		t.Errorf("the docker template no longer nests its puppet twin: %v", err)
	}
	files := artifacts(t, rs...)
	if _, ok := files["docker-ha/registry.yaml"]; !ok {
		t.Error("no docker-ha/registry.yaml artifact")
	}
}
