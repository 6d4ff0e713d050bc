package loader

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fuelsync/fuelsync/internal/mapfs"
)

// TestDeployPolicy: a cluster's deploy: is its own, else fuelsync.yaml's,
// else the default serve gives; anything but auto or manual is an error at
// its place.
func TestDeployPolicy(t *testing.T) {
	for name, c := range map[string]struct {
		cluster, settings string // lines added to clusters/demo.yaml and fuelsync.yaml
		want, err         string
	}{
		"not written: serve's default":   {want: "dflt"},
		"the cluster's own":              {cluster: "deploy: manual", want: "manual"},
		"the repository's default":       {settings: "deploy: manual", want: "manual"},
		"the cluster's over the default": {cluster: "deploy: auto", settings: "deploy: manual", want: "auto"},
		"a bad value in the cluster":     {cluster: "deploy: sometimes", err: `clusters/demo.yaml:32,9-18 "cluster demo: deploy must be auto or manual, not \"sometimes\""`},
		"a bad value in the settings":    {settings: "deploy: yes", err: `fuelsync.yaml:1,9-12 "fuelsync.yaml: deploy must be auto or manual, not \"yes\""`},
	} {
		t.Run(name, func(t *testing.T) {
			fsys, err := mapfs.Read("../examples/quickstart")
			if err != nil {
				t.Fatal(err)
			}
			if c.cluster != "" {
				f := fsys["clusters/demo.yaml"]
				f.Data = append(append([]byte{}, f.Data...), []byte(c.cluster+"\n")...)
			}
			if c.settings != "" {
				fsys["fuelsync.yaml"] = &fstest.MapFile{Data: []byte(c.settings + "\n")}
			}
			repo, diags := Load(fsys, Options{})
			if c.err != "" {
				if !strings.Contains(diagsString(diags), c.err) {
					t.Fatalf("want error %q, got:\n%s", c.err, diagsString(diags))
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diagsString(diags))
			}
			if got := repo.DeployPolicy(repo.Cluster("demo"), "dflt"); got != c.want {
				t.Errorf("deploy policy %q, want %q", got, c.want)
			}
		})
	}
}
