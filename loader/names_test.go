package loader

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

// Names from the repository become path segments of the artifacts; a name that
// could climb out of the output directory, hide a file or collide with the
// manifest is an error at its own line.
func TestNamesThatBecomePathsAreValidated(t *testing.T) {
	const release = "    release_name: R on CentOS\n    operating_system: CentOS\n    version: r-1.0\n"
	tests := map[string]struct {
		files   map[string]string
		record  string // added to the release record
		file    string
		line    int
		summary string
	}{
		"graph type climbing out": {
			record: "    graphs:\n      - type: \"../../../../outside/evil\"\n        tasks: []\n",
			file:   "plugins/r/metadata.yaml", line: 18,
			summary: `invalid graph type "../../../../outside/evil"`,
		},
		"graph type with a separator": {
			record: "    graphs:\n      - type: a/b\n        tasks: []\n",
			file:   "plugins/r/metadata.yaml", line: 18,
			summary: `invalid graph type "a/b"`,
		},
		"cluster name climbing out": {
			files: map[string]string{"clusters/c.yaml": "cluster: ../../escape\nrelease: r-1.0\n"},
			file:  "clusters/c.yaml", line: 1,
			summary: `invalid cluster name "../../escape"`,
		},
		"cluster name ..": {
			files: map[string]string{"clusters/c.yaml": "cluster: ..\nrelease: r-1.0\n"},
			file:  "clusters/c.yaml", line: 1,
			summary: `invalid cluster name ".."`,
		},
		"cluster name with a separator": {
			files: map[string]string{"clusters/c.yaml": "release: r-1.0\ncluster: a/b\n"},
			file:  "clusters/c.yaml", line: 2,
			summary: `invalid cluster name "a/b"`,
		},
		"hidden cluster name": {
			files: map[string]string{"clusters/c.yaml": "cluster: .x\nrelease: r-1.0\n"},
			file:  "clusters/c.yaml", line: 1,
			summary: `invalid cluster name ".x"`,
		},
		"cluster named after the manifest": {
			files: map[string]string{"clusters/c.yaml": "cluster: manifest.json\nrelease: r-1.0\n"},
			file:  "clusters/c.yaml", line: 1,
			summary: `cluster name "manifest.json" is reserved for the artifacts' manifest`,
		},
		"cluster name from its file name": {
			files: map[string]string{"clusters/Prod.yaml": "release: r-1.0\n"},
			file:  "clusters/Prod.yaml", line: 1,
			summary: `invalid cluster name "Prod"`,
		},
		"HCL cluster label": {
			files: map[string]string{"clusters/c.hcl": "cluster \"../up\" {\n  release = \"r-1.0\"\n}\n"},
			file:  "clusters/c.hcl", line: 1,
			summary: `invalid cluster name "../up"`,
		},
		"over-long node name": {
			files: map[string]string{"clusters/c.yaml": "release: r-1.0\nnodes:\n  " + strings.Repeat("n", MaxNameLength+1) + ": {roles: [controller]}\n"},
			file:  "clusters/c.yaml", line: 3,
			summary: fmt.Sprintf("invalid node name %q", strings.Repeat("n", MaxNameLength+1)),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			fsys := releaseRepo(release + tt.record)
			for n, data := range tt.files {
				fsys[n] = &fstest.MapFile{Data: []byte(data)}
			}
			_, diags := Load(fsys, Options{})
			var got []string
			for _, d := range diags {
				if strings.HasPrefix(d.Summary, tt.summary) {
					if d.Subject == nil || d.Subject.Filename != tt.file || d.Subject.Start.Line != tt.line {
						t.Errorf("diagnostic at %v, want %s line %d", d.Subject, tt.file, tt.line)
					}
					return
				}
				got = append(got, d.Summary)
			}
			t.Errorf("want %q, got:\n%s", tt.summary, strings.Join(got, "\n"))
		})
	}
}

func TestValidNamesPass(t *testing.T) {
	fsys := releaseRepo("    release_name: R on CentOS\n    operating_system: CentOS\n    version: r-1.0\n" +
		"    graphs:\n      - type: net-verification.v2_x\n        tasks: []\n")
	fsys["clusters/prod-1.yaml"] = &fstest.MapFile{Data: []byte("release: r-1.0\nnodes:\n  node-1.rack_a: {roles: [controller]}\n")}
	if _, diags := Load(fsys, Options{}); diags.HasErrors() {
		t.Fatal(diags)
	}
}
