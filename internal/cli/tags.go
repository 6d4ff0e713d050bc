package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/render"
)

func tagsCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:            "tags",
		Usage:           "list the tags of a cluster or a release; assign and unassign a node's tags",
		HideHelpCommand: true,
		OnUsageError:    usageError,
		Subcommands: []*cli.Command{
			tagsListCommand(stdout, stderr),
			nodeEditCommand("tags", "assign", stdout, stderr),
			nodeEditCommand("tags", "unassign", stdout, stderr),
			tagMetaCommand("create", stdout, stderr),
			tagMetaCommand("delete", stdout, stderr),
			tagMetaCommand("update", stdout, stderr),
		},
	}
}

type tagsJSON struct {
	FormatVersion string                 `json:"format_version"`
	Cluster       string                 `json:"cluster,omitempty"`
	Release       string                 `json:"release,omitempty"`
	Tags          []*render.TagInfo      `json:"tags,omitempty"`
	Node          string                 `json:"node,omitempty"`
	NodeTags      []render.NodeTagSource `json:"node_tags,omitempty"`
}

func tagsListCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "list",
		Usage:        "every tag with its owner, has_primary, the roles listing it and the nodes carrying it",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "With --cluster, the cluster's merged tags metadata (release, enabled plugins, the\n" +
			"cluster's own tags): owner, has_primary, the roles that list each tag (a role's tag cannot\n" +
			"be deleted; a tag no role lists is user-defined) and the nodes carrying it, the primary\n" +
			"one marked. With --node too, that node's effective tags and where each comes from. With\n" +
			"--release, the release's own tags.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cluster", Usage: "the tags of cluster `C`"},
			&cli.StringFlag{Name: "release", Usage: "the tags of release `R` (a version, a name or name@version)"},
			&cli.StringFlag{Name: "node", Usage: "with --cluster: node `N`'s effective tags and their sources"},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			scope, err := parseScope(c, "tags list")
			if err != nil {
				return err
			}
			node := c.String("node")
			if node != "" && scope.cluster == "" {
				return &exitError{code: 1, msg: "--node needs --cluster"}
			}
			out, err := tagsList(g, scope, node)
			if err != nil {
				return err
			}
			return tagsView(g, out)
		},
	}
}

// tagsList is what tags list prints: the tags of a release, of a cluster,
// or (node not empty) a node's effective tags and their sources.
func tagsList(g *globals, scope scopeArgs, node string) (*tagsJSON, error) {
	src, repo, err := loadRepo(g)
	if err != nil {
		return nil, err
	}
	out := &tagsJSON{FormatVersion: "1"}
	if scope.release != "" {
		rel, err := findRelease(repo, scope.release)
		if err != nil {
			return nil, err
		}
		out.Release, out.Tags = rel.Version, render.ReleaseTagList(rel)
		return out, nil
	}
	cl, m, err := clusterModel(g, src, repo, scope.cluster)
	if err != nil {
		return nil, err
	}
	out.Cluster = cl.Name
	if node == "" {
		out.Tags = m.TagList()
		return out, nil
	}
	if out.NodeTags = m.NodeTagSources(node); out.NodeTags == nil {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("cluster %s has no node %q", cl.Name, node)}
	}
	out.Node = node
	return out, nil
}

// tagsView prints tags list's result: JSON, or a table (a node's tags with
// where each comes from; else every tag, with its nodes for a cluster).
func tagsView(g *globals, out *tagsJSON) error {
	if g.format == formatJSON {
		return writeJSON(g.stdout, out)
	}
	if out.Node != "" {
		var rows [][]string
		for _, nt := range out.NodeTags {
			rows = append(rows, []string{safetext.Line(nt.Tag), safetext.Line(strings.Join(nt.Sources, ", "))})
		}
		return writeTable(g.stdout, []string{"TAG", "FROM"}, rows)
	}
	head := []string{"TAG", "OWNER", "PRIMARY", "KIND"}
	if out.Release == "" {
		head = append(head, "NODES")
	}
	var rows [][]string
	for _, t := range out.Tags {
		kind := "user-defined"
		if !t.UserDefined() {
			kind = "role " + strings.Join(t.Roles, ", role ")
		}
		primary := "no"
		if t.HasPrimary {
			primary = "yes"
		}
		row := []string{safetext.Line(t.Name), safetext.Line(t.Owner), primary, kind}
		if out.Release == "" {
			var nodes []string
			for _, n := range t.Nodes {
				if n == t.Primary {
					n += " (primary)"
				}
				nodes = append(nodes, n)
			}
			row = append(row, safetext.Line(strings.Join(nodes, ", ")))
		}
		rows = append(rows, row)
	}
	return writeTable(g.stdout, head, rows)
}

func rolesCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:            "roles",
		Usage:           "list the roles of a cluster or a release; assign and unassign a node's roles",
		HideHelpCommand: true,
		OnUsageError:    usageError,
		Subcommands: []*cli.Command{
			rolesListCommand(stdout, stderr),
			nodeEditCommand("roles", "assign", stdout, stderr),
			nodeEditCommand("roles", "unassign", stdout, stderr),
		},
	}
}
