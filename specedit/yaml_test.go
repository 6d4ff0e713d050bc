package specedit

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func add(items ...string) func([]string) []string {
	return func(cur []string) []string {
		for _, it := range items {
			if !slices.Contains(cur, it) {
				cur = append(cur, it)
			}
		}
		return cur
	}
}

func remove(items ...string) func([]string) []string {
	return func(cur []string) []string {
		return slices.DeleteFunc(cur, func(s string) bool { return slices.Contains(items, s) })
	}
}

func TestEditYAML(t *testing.T) {
	const flow = `# demo
cluster: demo
nodes:                          # by name
  node-1: {id: 1, roles: [controller]}   # the first
  node-2: {id: 2, roles: [controller], tags: {assign: [backup]}}
`
	const block = `cluster: demo
nodes:
  node-1:
    id: 1
    roles:
      - controller   # primary
    # a comment inside
  node-2:
    id: 2
    roles: [controller]
    tags:
      assign:
        - backup
  node-3:
    id: 3
    roles: [compute]
# the end
`
	const both = `nodes:
  node-2:
    id: 2
    roles: [controller]
    tags: {assign: [backup]}    # node-2 also carries the tag backup
  node-3:
    id: 3
    roles: [compute]
    tags:
      assign: [backup]    # node-3 also backs up
      unassign:           # not a message queue
        - rabbitmq
  node-4: {id: 4, roles: [compute], tags: {assign: [backup], unassign: [rabbitmq]}}   # the fourth
`
	for _, tc := range []struct {
		name, src string
		edit      Edit
		want      string
	}{
		{"flow roles", flow, Edit{"node-1", []string{"roles"}, add("compute")},
			"# demo\ncluster: demo\nnodes:                          # by name\n  node-1: {id: 1, roles: [controller, compute]}   # the first\n  node-2: {id: 2, roles: [controller], tags: {assign: [backup]}}\n"},
		{"flow tags added", flow, Edit{"node-1", []string{"tags", "assign"}, add("backup")},
			"# demo\ncluster: demo\nnodes:                          # by name\n  node-1: {id: 1, roles: [controller], tags: {assign: [backup]}}   # the first\n  node-2: {id: 2, roles: [controller], tags: {assign: [backup]}}\n"},
		{"flow unassign added", flow, Edit{"node-2", []string{"tags", "unassign"}, add("rabbitmq")},
			"# demo\ncluster: demo\nnodes:                          # by name\n  node-1: {id: 1, roles: [controller]}   # the first\n  node-2: {id: 2, roles: [controller], tags: {assign: [backup], unassign: [rabbitmq]}}\n"},
		// An emptied list goes, and so does tags when nothing is left in it.
		{"flow assign emptied", flow, Edit{"node-2", []string{"tags", "assign"}, remove("backup")},
			"# demo\ncluster: demo\nnodes:                          # by name\n  node-1: {id: 1, roles: [controller]}   # the first\n  node-2: {id: 2, roles: [controller]}\n"},
		{"block roles", block, Edit{"node-1", []string{"roles"}, add("compute")},
			"cluster: demo\nnodes:\n  node-1:\n    id: 1\n    roles:\n      - controller\n      - compute\n    # a comment inside\n  node-2:\n    id: 2\n    roles: [controller]\n    tags:\n      assign:\n        - backup\n  node-3:\n    id: 3\n    roles: [compute]\n# the end\n"},
		{"block tags added", block, Edit{"node-3", []string{"tags", "assign"}, add("backup")},
			"cluster: demo\nnodes:\n  node-1:\n    id: 1\n    roles:\n      - controller   # primary\n    # a comment inside\n  node-2:\n    id: 2\n    roles: [controller]\n    tags:\n      assign:\n        - backup\n  node-3:\n    id: 3\n    roles: [compute]\n    tags: {assign: [backup]}\n# the end\n"},
		{"block unassign added", block, Edit{"node-2", []string{"tags", "unassign"}, add("rabbitmq")},
			"cluster: demo\nnodes:\n  node-1:\n    id: 1\n    roles:\n      - controller   # primary\n    # a comment inside\n  node-2:\n    id: 2\n    roles: [controller]\n    tags:\n      assign:\n        - backup\n      unassign: [rabbitmq]\n  node-3:\n    id: 3\n    roles: [compute]\n# the end\n"},
		{"block list emptied", block, Edit{"node-2", []string{"tags", "assign"}, remove("backup")},
			"cluster: demo\nnodes:\n  node-1:\n    id: 1\n    roles:\n      - controller   # primary\n    # a comment inside\n  node-2:\n    id: 2\n    roles: [controller]\n  node-3:\n    id: 3\n    roles: [compute]\n# the end\n"},
		// The line's comment, about the list, goes with it.
		{"line emptied with its comment", both, Edit{"node-2", []string{"tags", "assign"}, remove("backup")},
			"nodes:\n  node-2:\n    id: 2\n    roles: [controller]\n  node-3:\n    id: 3\n    roles: [compute]\n    tags:\n      assign: [backup]    # node-3 also backs up\n      unassign:           # not a message queue\n        - rabbitmq\n  node-4: {id: 4, roles: [compute], tags: {assign: [backup], unassign: [rabbitmq]}}   # the fourth\n"},
		{"one of two block lists emptied", both, Edit{"node-3", []string{"tags", "unassign"}, remove("rabbitmq")},
			"nodes:\n  node-2:\n    id: 2\n    roles: [controller]\n    tags: {assign: [backup]}    # node-2 also carries the tag backup\n  node-3:\n    id: 3\n    roles: [compute]\n    tags:\n      assign: [backup]    # node-3 also backs up\n  node-4: {id: 4, roles: [compute], tags: {assign: [backup], unassign: [rabbitmq]}}   # the fourth\n"},
		{"one of two flow lists emptied", both, Edit{"node-4", []string{"tags", "assign"}, remove("backup")},
			"nodes:\n  node-2:\n    id: 2\n    roles: [controller]\n    tags: {assign: [backup]}    # node-2 also carries the tag backup\n  node-3:\n    id: 3\n    roles: [compute]\n    tags:\n      assign: [backup]    # node-3 also backs up\n      unassign:           # not a message queue\n        - rabbitmq\n  node-4: {id: 4, roles: [compute], tags: {unassign: [rabbitmq]}}   # the fourth\n"},
		{"quoting", flow, Edit{"node-1", []string{"roles"}, add("yes", "a b")},
			"# demo\ncluster: demo\nnodes:                          # by name\n  node-1: {id: 1, roles: [controller, 'yes', a b]}   # the first\n  node-2: {id: 2, roles: [controller], tags: {assign: [backup]}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditYAML([]byte(tc.src), tc.edit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := EditYAML([]byte(flow), Edit{"node-1", []string{"roles"}, add("controller")}); err != ErrNoChange {
		t.Errorf("a no-op edit: %v", err)
	}
	if _, err := EditYAML([]byte(flow), Edit{"node-9", []string{"roles"}, add("x")}); err == nil {
		t.Error("an unknown node")
	}
}
