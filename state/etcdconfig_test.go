package state

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStateURL(t *testing.T) {
	cfg, err := ParseURL("etcd://10.0.0.1:2379,10.0.0.2:2379/fuelsync/prod/")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"10.0.0.1:2379", "10.0.0.2:2379"}, cfg.Endpoints); diff != "" || cfg.Prefix != "/fuelsync/prod" {
		t.Errorf("endpoints (-want +got):\n%s; prefix %q", diff, cfg.Prefix)
	}
	for _, bad := range []string{"http://h:2379/p", "etcd://h:2379", "etcd://h:2379/", "etcd:///p", "etcd://host/p"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseStateURL(%q) accepted", bad)
		}
	}
}
