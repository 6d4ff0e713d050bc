package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// roleInfo is one role of roles list.
type roleInfo struct {
	Name string `json:"name"`
	// Owner is "release" or "plugin <name>".
	Owner string `json:"owner"`
	// Tags are the role's tags (the cluster's override, else the role's own, else
	// the role's name).
	Tags []string `json:"tags"`
	// Nodes carry the role (cluster only).
	Nodes []string `json:"nodes,omitempty"`
}

type rolesJSON struct {
	FormatVersion string      `json:"format_version"`
	Cluster       string      `json:"cluster,omitempty"`
	Release       string      `json:"release,omitempty"`
	Roles         []*roleInfo `json:"roles"`
}

func rolesListCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "list",
		Usage:        "every role with its owner, its tags and the nodes carrying it",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "With --cluster, the cluster's roles (the release's and its enabled plugins') with the\n" +
			"tags each gives a node and the nodes that carry it. With --release, the release's own\n" +
			"roles and their tags.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cluster", Usage: "the roles of cluster `C`"},
			&cli.StringFlag{Name: "release", Usage: "the roles of release `R` (a version, a name or name@version)"},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("roles list takes no arguments (got %q)", c.Args().First())}
			}
			scope, err := parseScope(c, "roles list")
			if err != nil {
				return err
			}
			out, err := rolesList(g, scope)
			if err != nil {
				return err
			}
			return rolesView(g, out)
		},
	}
}

// rolesList is what roles list prints: the roles of a release (each with
// its tags), or of a cluster (with the nodes carrying each), by name.
func rolesList(g *globals, scope scopeArgs) (*rolesJSON, error) {
	src, repo, err := loadRepo(g)
	if err != nil {
		return nil, err
	}
	out := &rolesJSON{FormatVersion: formatVersion, Roles: []*roleInfo{}}
	if scope.release != "" {
		rel, err := findRelease(repo, scope.release)
		if err != nil {
			return nil, err
		}
		out.Release = rel.Version
		for _, r := range rel.Roles {
			tags := r.Tags
			if !r.HasTags {
				tags = []string{r.Name}
			}
			out.Roles = append(out.Roles, &roleInfo{Name: r.Name, Owner: "release", Tags: slices.Clone(tags)})
		}
	} else {
		cl, m, err := clusterModel(g, src, repo, scope.cluster)
		if err != nil {
			return nil, err
		}
		out.Cluster = cl.Name
		out.Roles = clusterRoles(m, cl)
	}
	slices.SortFunc(out.Roles, func(a, b *roleInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// rolesView prints roles list's result: JSON, or a table (with the nodes
// for a cluster).
func rolesView(g *globals, out *rolesJSON) error {
	if g.format == formatJSON {
		return writeJSON(g.stdout, out)
	}
	head := []string{"ROLE", "OWNER", "TAGS"}
	if out.Release == "" {
		head = append(head, "NODES")
	}
	var rows [][]string
	for _, r := range out.Roles {
		row := []string{safetext.Line(r.Name), safetext.Line(r.Owner), safetext.Line(dashJoin(r.Tags))}
		if out.Release == "" {
			row = append(row, safetext.Line(dashJoin(r.Nodes)))
		}
		rows = append(rows, row)
	}
	return writeTable(g.stdout, head, rows)
}

// clusterRoles lists the merged roles of a cluster with the nodes carrying each.
func clusterRoles(m *render.Model, cl *loader.Cluster) []*roleInfo {
	var out []*roleInfo
	for _, r := range m.Roles {
		info := &roleInfo{Name: r.Name, Owner: r.Owner(), Tags: slices.Clone(r.Tags)}
		if info.Tags == nil {
			info.Tags = []string{}
		}
		for _, n := range cl.Nodes {
			for _, ref := range n.Roles {
				if ref.Name == r.Name {
					info.Nodes = append(info.Nodes, n.Name)
					break
				}
			}
		}
		out = append(out, info)
	}
	return out
}
