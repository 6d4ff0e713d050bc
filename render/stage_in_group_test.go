package render

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/loader"
)

// TestStageInGroupStaysOnSync pins a deliberate difference from nailgun on real
// data: detach-database's groups list the stage deploy_start in their tasks:.
// nailgun copies the stage onto the group's nodes as a no-op task; fuelsync keeps
// stages on the sync pseudo node only (with a warning at the group's entry), which
// orders the same: every task the group places on its node still runs after
// deploy_start@sync.
func TestStageInGroupStaysOnSync(t *testing.T) {
	repo, ld := loader.Load(os.DirFS(mitakaExample), loader.Options{})
	if ld.HasErrors() {
		t.Fatalf("the example does not load:\n%s", diagText(ld))
	}
	rs, diags := Render(repo, Options{Clusters: []string{"mitaka"}})
	if diags.HasErrors() || len(rs) != 1 {
		t.Fatalf("%d clusters rendered; errors:\n%s", len(rs), diagText(diags))
	}
	var warned []string
	for _, d := range diags {
		if strings.Contains(d.Summary, "lists the stage deploy_start, which is ignored") {
			warned = append(warned, d.Subject.Filename)
		}
	}
	if len(warned) != 2 || !strings.HasSuffix(warned[0], "detach-database/deployment_tasks.yaml") {
		t.Errorf("warnings about the stage in detach-database's groups: %v", warned)
	}

	g := rs[0].Graph("default")
	sync := g.Node(SyncNode)
	if sync == nil || sync.Task("deploy_start") == nil {
		t.Fatal("deploy_start is not on the sync node")
	}
	// node-4 carries primary-standalone-database: its group's tasks are placed there.
	db := g.Node("node-4")
	if db == nil {
		t.Fatal("no node-4")
	}
	if db.Task("deploy_start") != nil {
		t.Error("the stage deploy_start was copied onto node-4")
	}
	// The tasks primary-standalone-database lists besides the stage: each is on
	// node-4 and runs after deploy_start@sync (a chain of requires edges leads
	// there).
	group := []string{"hiera", "fuel_pkgs", "globals", "tools", "logging", "netconfig", "hosts", "firewall",
		"database-firewall", "primary-cluster", "database-virtual-ip", "primary-cluster-haproxy",
		"openstack-haproxy-stats", "primary-database"}
	after := map[*PlacedTask]bool{}
	var reaches func(pt *PlacedTask, seen map[*PlacedTask]bool) bool
	reaches = func(pt *PlacedTask, seen map[*PlacedTask]bool) bool {
		if v, ok := after[pt]; ok {
			return v
		}
		if pt.Node() == SyncNode && pt.ID() == "deploy_start" {
			return true
		}
		if seen[pt] {
			return false
		}
		seen[pt] = true
		ok := slices.ContainsFunc(pt.AllRequires(), func(e Edge) bool {
			n := g.Node(e.Node())
			return n != nil && n.Task(e.Task()) != nil && reaches(n.Task(e.Task()), seen)
		})
		after[pt] = ok
		return ok
	}
	for _, id := range group {
		pt := db.Task(id)
		if pt == nil {
			t.Errorf("node-4 lacks %s, which its group lists", id)
			continue
		}
		if !reaches(pt, map[*PlacedTask]bool{}) {
			t.Errorf("%s@node-4 is not ordered after deploy_start@sync", id)
		}
	}
}
