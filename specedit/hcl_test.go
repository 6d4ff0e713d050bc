package specedit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
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

  node "node-3" {
    id    = 3
    roles = ["compute"]
    tags {
      assign   = ["backup"]
      unassign = ["rabbitmq"] # not a message queue
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
		// An emptied list goes, and so does its block when nothing is left in it.
		{"the only list emptied", Edit{"node-2", []string{"tags", "assign"}, remove("backup")}, []string{"backup"},
			"    roles = local.controller\n    tags {\n      assign = [\"backup\"]\n    }\n  }", "    roles = local.controller\n  }"},
		{"one of two lists emptied", Edit{"node-3", []string{"tags", "unassign"}, remove("rabbitmq")}, []string{"rabbitmq"},
			"      assign   = [\"backup\"]\n      unassign = [\"rabbitmq\"] # not a message queue\n", "      assign   = [\"backup\"]\n"},
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

// TestEditHCLFormatted: an edit of a file formatted as hclwrite (and terraform
// fmt) formats it leaves it formatted, and an edit of a file formatted otherwise
// changes only what it edits.
func TestEditHCLFormatted(t *testing.T) {
	const src = `cluster "demo" {
  release = "quickstart-1.0"
  mode    = "ha"

  node "node-1" {
    id    = 1
    roles = ["controller"]
  }

  node "node-2" { id = 2 }

  node "node-3" {
    id = 3
    tags {
      assign = ["a"] # kept
    }
  }
}
`
	tags := cty.ObjectVal(map[string]cty.Value{
		"backup":      cty.ObjectVal(map[string]cty.Value{"has_primary": cty.False}),
		"db":          cty.ObjectVal(map[string]cty.Value{"has_primary": cty.True}),
		"needs quote": cty.ObjectVal(map[string]cty.Value{"has_primary": cty.False}),
	})
	edits := []struct {
		name string
		edit func([]byte) ([]byte, error)
		want []string // in the result
	}{
		{"roles replaced", func(s []byte) ([]byte, error) {
			return EditHCL(s, "demo.hcl", Edit{"node-1", []string{"roles"}, add("compute")}, []string{"controller"})
		}, []string{`roles = ["controller", "compute"]`}},
		{"roles added to a one-line block", func(s []byte) ([]byte, error) {
			return EditHCL(s, "demo.hcl", Edit{"node-2", []string{"roles"}, add("compute")}, nil)
		}, []string{"  node \"node-2\" {\n    id    = 2\n    roles = [\"compute\"]\n  }\n"}},
		{"a tags block added", func(s []byte) ([]byte, error) {
			return EditHCL(s, "demo.hcl", Edit{"node-1", []string{"tags", "unassign"}, add("x")}, nil)
		}, []string{"    roles = [\"controller\"]\n    tags {\n      unassign = [\"x\"]\n    }\n  }\n"}},
		{"unassign beside assign", func(s []byte) ([]byte, error) {
			return EditHCL(s, "demo.hcl", Edit{"node-3", []string{"tags", "unassign"}, add("b")}, nil)
		}, []string{"      assign   = [\"a\"] # kept\n      unassign = [\"b\"]\n"}},
		{"cluster tags", func(s []byte) ([]byte, error) { return SetHCLClusterAttr(s, "demo.hcl", "tags", tags) },
			[]string{"  tags = {\n    backup = {\n      has_primary = false\n    }\n", `"needs quote" = {`}},
		{"a template sequence stays text", func(s []byte) ([]byte, error) {
			return EditHCL(s, "demo.hcl", Edit{"node-1", []string{"roles"}, add("${x}\"")}, []string{"controller"})
		}, []string{`roles = ["controller", "$${x}\""]`}},
	}
	for _, tc := range edits {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.edit([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("no %q in\n%s", w, got)
				}
			}
			if diff := cmp.Diff(string(hclwrite.Format(got)), string(got)); diff != "" {
				t.Errorf("the result is not formatted (-formatted +got):\n%s", diff)
			}
		})
	}

	// A file formatted otherwise: only the edited expression changes.
	odd := "cluster \"demo\" {\n\trelease=\"quickstart-1.0\"\n\tnode \"node-1\" {\n\t\tid=1\n\t\troles=[\"controller\"]   # the roles\n\t}\n}\n"
	got, err := EditHCL([]byte(odd), "demo.hcl", Edit{"node-1", []string{"roles"}, add("compute")}, []string{"controller"})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(odd, `roles=["controller"]`, `roles=["controller", "compute"]`, 1); string(got) != want {
		t.Errorf("(-want +got):\n%s", cmp.Diff(want, string(got)))
	}
	got, err = EditHCL([]byte(odd), "demo.hcl", Edit{"node-1", []string{"tags", "assign"}, add("b")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(odd, "   # the roles\n", "   # the roles\n\t\ttags {\n\t\t\tassign = [\"b\"]\n\t\t}\n", 1); string(got) != want {
		t.Errorf("tabs: (-want +got):\n%s", cmp.Diff(want, string(got)))
	}

	// Removing the cluster's tags takes their lines, comment included.
	withTags, err := SetHCLClusterAttr([]byte(src), "demo.hcl", "tags", tags)
	if err != nil {
		t.Fatal(err)
	}
	back, err := SetHCLClusterAttr(withTags, "demo.hcl", "tags", cty.NilVal)
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != src {
		t.Errorf("tags set and removed (-want +got):\n%s", cmp.Diff(src, string(back)))
	}
}
