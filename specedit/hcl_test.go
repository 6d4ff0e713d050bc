package specedit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEditHCL(t *testing.T) {
	const src = `locals {
  controller = ["controller"]
}

cluster "demo" {
  release = "quickstart-1.0" # the release

  node "node-1" {
    id    = 1
    roles = local.controller
  }

  node "node-2" {
    id    = 2
    roles = local.controller
    tags {
      assign = ["backup"]
    }
  }

  node "compute" {
    for_each = toset(["a"])
    roles    = ["compute"]
  }
}
`
	for _, tc := range []struct {
		name    string
		edit    Edit
		current []string
		old     string
		new     string
	}{
		{"roles from a local", Edit{"node-1", []string{"roles"}, add("storage")}, []string{"controller"},
			"    roles = local.controller\n  }\n\n  node \"node-2\"", "    roles = [\"controller\", \"storage\"]\n  }\n\n  node \"node-2\""},
		{"assign in an existing block", Edit{"node-2", []string{"tags", "assign"}, add("extra")}, []string{"backup"},
			`assign = ["backup"]`, `assign = ["backup", "extra"]`},
		{"a new tags block", Edit{"node-1", []string{"tags", "unassign"}, add("rabbitmq")}, nil,
			"    roles = local.controller\n  }\n\n  node \"node-2\"", "    roles = local.controller\n    tags {\n      unassign = [\"rabbitmq\"]\n    }\n  }\n\n  node \"node-2\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditHCL([]byte(src), "demo.hcl", tc.edit, tc.current)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(src, tc.old) {
				t.Fatalf("the source has no %q", tc.old)
			}
			want := strings.Replace(src, tc.old, tc.new, 1)
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := EditHCL([]byte(src), "demo.hcl", Edit{"compute-a", []string{"roles"}, add("x")}, []string{"compute"}); err == nil || !strings.Contains(err.Error(), "for_each") {
		t.Errorf("a for_each node: %v", err)
	}
}
