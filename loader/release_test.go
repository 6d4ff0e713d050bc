package loader

import (
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

const fixture = `
- &base
  model: nailgun.release
  fields:
    state: available
    modes: [ha_compact]
    roles_metadata:
      controller: {name: Controller, description: C, tags: [controller]}
      compute: {name: Compute, description: N}
    tags_metadata: {controller: {has_primary: true}, compute: {has_primary: false}}
    attributes_metadata: {editable: {common: {debug: {value: false, type: checkbox}, puppet: {value: x}}}}
- pk: 1
  extend: *base
  fields: {name: "R on CentOS", version: r-1.0, operating_system: CentOS}
- &ubuntu
  pk: 2
  extend: *base
  fields: {name: "R on Ubuntu", version: r-1.0, operating_system: Ubuntu, state: unavailable}
- pk: 3
  extend: *ubuntu
  fields: {name: "R on Ubuntu+UCA", version: r-1.0}
`

func releaseRepo(record string) fstest.MapFS {
	return fstest.MapFS{
		"plugins/r/fixture.yaml": {Data: []byte(fixture)},
		"plugins/r/metadata.yaml": {Data: []byte(`name: r
title: R
version: 1.0.0
package_version: '5.0.0'
description: d
licenses: [x]
authors: [x]
homepage: h
groups: []
releases:
  - is_release: true
    description: d
    base_release_path: fixture.yaml
` + record)},
	}
}

func TestReleaseFromFixture(t *testing.T) {
	tests := map[string]struct {
		record string
		want   map[string]any
	}{
		"by version, os and name": {
			record: "    release_name: R on Ubuntu\n    operating_system: ubuntu\n    version: r-1.0\n",
			want:   map[string]any{"name": "R on Ubuntu", "state": "unavailable", "roles": 2, "os": "ubuntu"},
		},
		"an extend chain (pk 3 extends pk 2 extends base)": {
			record: "    release_name: R on Ubuntu+UCA\n    os: Ubuntu\n    version: r-1.0\n",
			want:   map[string]any{"name": "R on Ubuntu+UCA", "state": "unavailable", "roles": 2, "os": "Ubuntu"},
		},
		"unique by version and os": {
			record: "    release_name: Mine\n    operating_system: CentOS\n    version: r-1.0\n",
			want:   map[string]any{"name": "Mine", "state": "available", "roles": 2, "os": "CentOS"},
		},
		"fixture_pk, record keys deep-merged over the item": {
			record: "    release_name: Mine\n    operating_system: Ubuntu\n    version: r-1.0\n    fixture_pk: 3\n" +
				"    roles:\n      storage: {name: S, description: S}\n",
			want: map[string]any{"name": "Mine", "state": "unavailable", "roles": 3, "os": "Ubuntu"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			repo, diags := Load(releaseRepo(tt.record), Options{})
			if diags.HasErrors() || len(repo.Releases) != 1 {
				t.Fatalf("diags: %v", diags)
			}
			r := repo.Releases[0]
			got := map[string]any{"name": r.Name, "state": r.Data.Get("state").String(), "roles": len(r.Roles), "os": r.OperatingSystem}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// Deep merge: the base's attributes survive under the item's.
			if r.Attributes.Get("common").Get("puppet").IsNull() || r.Data.Get("modes").IsNull() {
				t.Errorf("inherited keys are missing: %v", r.Data.Interface())
			}
		})
	}
}

func TestReleaseFromFixtureErrors(t *testing.T) {
	tests := map[string]struct{ record, summary string }{
		"ambiguous": {"    release_name: Other\n    operating_system: Ubuntu\n    version: r-1.0\n",
			`2 items of the base release fixture match version "r-1.0" and operating_system "Ubuntu" and none is named "Other"; candidates: pk 2 "R on Ubuntu" (r-1.0, Ubuntu); pk 3 "R on Ubuntu+UCA" (r-1.0, Ubuntu)`},
		"none": {"    release_name: X\n    operating_system: Debian\n    version: r-1.0\n",
			`no item of the base release fixture has version "r-1.0" and operating_system "Debian"; candidates: pk 1 "R on CentOS" (r-1.0, CentOS); pk 2 "R on Ubuntu" (r-1.0, Ubuntu); pk 3 "R on Ubuntu+UCA" (r-1.0, Ubuntu)`},
		"bad fixture_pk": {"    release_name: X\n    operating_system: Ubuntu\n    version: r-1.0\n    fixture_pk: 9\n",
			`fixture_pk 9: no such item in the base release fixture; candidates: pk 1 "R on CentOS" (r-1.0, CentOS); pk 2 "R on Ubuntu" (r-1.0, Ubuntu); pk 3 "R on Ubuntu+UCA" (r-1.0, Ubuntu)`},
		"both spellings": {"    release_name: R on Ubuntu\n    operating_system: Ubuntu\n    os: Ubuntu\n    version: r-1.0\n",
			"release record: both os and operating_system are set; they are the same field, keep one"},
		"no release_name": {"    operating_system: Ubuntu\n    version: r-1.0\n", `release: missing required field "release_name"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, diags := Load(releaseRepo(tt.record), Options{})
			var got []string
			for _, d := range diags {
				if d.Summary == tt.summary {
					if d.Subject == nil || d.Subject.Filename != "plugins/r/metadata.yaml" {
						t.Errorf("diagnostic at %v, want plugins/r/metadata.yaml", d.Subject)
					}
					return
				}
				got = append(got, d.Summary)
			}
			t.Errorf("want %q, got:\n%s", tt.summary, strings.Join(got, "\n"))
		})
	}
}

func TestClusterHCLForEach(t *testing.T) {
	fsys := releaseRepo("    release_name: R on CentOS\n    operating_system: CentOS\n    version: r-1.0\n")
	fsys["clusters/big.hcl"] = &fstest.MapFile{Data: []byte(`
locals {
  computes = range(1, local.count + 1)
  count    = 3
  racks    = { a = "rack-a", b = "rack-b" }
}
cluster "big" {
  release = "r-1.0"
  node "controller" {
    id    = 100
    roles = ["controller"]
  }
  node "compute" {
    for_each = local.computes
    roles    = ["compute"]
  }
  node "edge" {
    for_each = local.racks
    name     = "edge-${each.key}-${replace(each.value, "rack-", "r")}"
    roles    = ["compute"]
  }
}
`)}
	repo, diags := Load(fsys, Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, n := range repo.Cluster("big").Nodes {
		got = append(got, n.Name+"#"+strconv.Itoa(n.ID))
	}
	want := []string{"controller#100", "compute-1#2", "compute-2#3", "compute-3#4", "edge-a-ra#5", "edge-b-rb#6"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}
