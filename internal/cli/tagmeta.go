package cli

import (
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/specedit"
)

// tagMetaCommand is tags create|delete|update: op is one of them.
func tagMetaCommand(op string, stdout, stderr io.Writer) *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "cluster", Usage: "a tag of cluster `C` (its tags: mapping)"},
		&cli.StringFlag{Name: "release", Usage: "a tag of release `R` (its tags metadata file)"},
		&cli.BoolFlag{Name: "commit", Usage: "commit the edit with git: the edited file alone, refused when it has uncommitted changes of its own"},
		&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "the commit `MESSAGE`"},
		&cli.StringFlag{Name: "author", Usage: "the commit's author `NAME <EMAIL>` (default: from git config)"},
	}
	if op != "delete" {
		flags = append(flags, &cli.BoolFlag{Name: "has-primary", Usage: "in HA mode, one node carries primary-NAME instead of NAME"})
	}
	return &cli.Command{
		Name:         op,
		Usage:        map[string]string{"create": "declare a tag", "delete": "delete a user-defined tag", "update": "change a tag's has_primary"}[op],
		ArgsUsage:    "NAME",
		OnUsageError: usageError,
		Description: "Edits the cluster spec's tags: mapping (--cluster) or the file declaring the release's tags\n" +
			"(--release), validated before it is written. A tag a role lists cannot be deleted; a tag\n" +
			"nodes still assign makes the edit invalid. update of a release or plugin tag for one\n" +
			"cluster adds an override to the cluster's tags:.",
		Flags: flags,
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() != 1 {
				return &exitError{code: 1, msg: fmt.Sprintf("tags %s takes one argument, the tag's name", op)}
			}
			if (c.String("cluster") == "") == (c.String("release") == "") {
				return &exitError{code: 1, msg: fmt.Sprintf("tags %s needs --cluster C or --release R (one of them)", op)}
			}
			return editTagMeta(g, c, op, c.Args().First())
		},
	}
}

func editTagMeta(g *globals, c *cli.Context, op, name string) error {
	src, repo, err := loadForEdit(g)
	if err != nil {
		return err
	}
	hasPrimary := c.Bool("has-primary")
	value := fmt.Sprintf("{has_primary: %t}", hasPrimary)
	verb := map[string]string{"create": "created", "delete": "deleted", "update": "updated"}[op]
	summary := fmt.Sprintf("tag %s %s", name, verb)
	if op != "delete" {
		summary += fmt.Sprintf(" (has_primary: %t)", hasPrimary)
	}
	var file string
	var data, orig []byte
	var clusters []string
	if cname := c.String("cluster"); cname != "" {
		cl := repo.Cluster(cname)
		if cl == nil {
			return &exitError{code: 1, msg: noCluster(cname, repo) + "; nothing written"}
		}
		m, mdiags := render.Build(repo, cl)
		if m == nil || mdiags.HasErrors() {
			return &exitError{code: 1, msg: fmt.Sprintf("cluster %s does not validate; nothing written", cl.Name)}
		}
		own := slices.IndexFunc(cl.Tags, func(t *loader.TagMeta) bool { return t.Name == name }) >= 0
		existing := m.Tags[name]
		switch op {
		case "create":
			if existing != nil {
				return &exitError{code: 1, msg: fmt.Sprintf("tag %s already exists (%s); use tags update; nothing written", name, existing.Owner)}
			}
		case "update":
			if existing == nil {
				return &exitError{code: 1, msg: fmt.Sprintf("cluster %s has no tag %s; use tags create; nothing written", cl.Name, name)}
			}
		case "delete":
			for _, r := range m.Roles {
				if slices.Contains(r.Tags, name) {
					return &exitError{code: 1, msg: fmt.Sprintf("tag %s belongs to role %s and cannot be deleted; nothing written", name, r.Name)}
				}
			}
			if !own {
				if existing == nil {
					return &exitError{code: 1, msg: fmt.Sprintf("cluster %s has no tag %s; nothing written", cl.Name, name)}
				}
				return &exitError{code: 1, msg: fmt.Sprintf("tag %s is declared by the %s, not by cluster %s; nothing written", name, existing.Owner, cl.Name)}
			}
		}
		file, clusters = cl.File, []string{cl.Name}
		if orig, err = fs.ReadFile(src.fsys, file); err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		if strings.HasSuffix(file, ".hcl") {
			data, err = specedit.SetHCLClusterAttr(orig, file, "tags", clusterTagsValue(cl.Tags, op, name, hasPrimary))
		} else {
			e := specedit.MapEdit{Path: []string{"tags"}, Key: name, Value: value}
			if op == "delete" {
				e.Value = ""
			}
			data, err = specedit.EditYAMLMap(orig, e)
		}
	} else {
		rel, rerr := findRelease(repo, c.String("release"))
		if rerr != nil {
			return rerr
		}
		var at *loader.TagMeta
		for _, t := range rel.Tags {
			if t.Name == name || (op == "create" && at == nil) {
				at = t
			}
		}
		exists := slices.IndexFunc(rel.Tags, func(t *loader.TagMeta) bool { return t.Name == name }) >= 0
		switch {
		case op == "create" && exists:
			return &exitError{code: 1, msg: fmt.Sprintf("release %s already declares tag %s; use tags update; nothing written", rel.Version, name)}
		case op != "create" && !exists:
			return &exitError{code: 1, msg: fmt.Sprintf("release %s declares no tag %s; nothing written", rel.Version, name)}
		case at == nil:
			return &exitError{code: 1, msg: fmt.Sprintf("release %s declares no tags yet: add its tags metadata by hand first; nothing written", rel.Version)}
		}
		if op == "delete" {
			for _, r := range rel.Roles {
				if slices.Contains(r.Tags, name) || (!r.HasTags && r.Name == name) {
					return &exitError{code: 1, msg: fmt.Sprintf("tag %s belongs to role %s and cannot be deleted; nothing written", name, r.Name)}
				}
			}
		}
		file = at.Range.Filename
		if strings.HasSuffix(file, ".hcl") {
			return &exitError{code: 1, msg: fmt.Sprintf("release %s declares its tags in %s: edit its tag blocks there; nothing written", rel.Version, file)}
		}
		if orig, err = fs.ReadFile(src.fsys, file); err != nil {
			return &exitError{code: 1, msg: err.Error()}
		}
		e := specedit.MapEdit{AtLine: at.Range.Start.Line, AtCol: at.Range.Start.Column, Key: name, Value: value}
		if op == "delete" {
			e.Value = ""
		}
		data, err = specedit.EditYAMLMap(orig, e)
		summary = fmt.Sprintf("release %s: %s", rel.Version, summary)
	}
	if err == specedit.ErrNoChange || (err == nil && string(data) == string(orig)) {
		return nothingToChange(g, src, file, summary)
	}
	if err != nil {
		return &exitError{code: 1, msg: fmt.Sprintf("%s: %v; nothing written", file, err)}
	}
	return finishEdit(g, c, src, repo, file, orig, data, summary, clusters)
}

// clusterTagsValue is the cluster's tags after the edit, as an HCL object.
func clusterTagsValue(tags []*loader.TagMeta, op, name string, hasPrimary bool) cty.Value {
	vals := map[string]cty.Value{}
	for _, t := range tags {
		vals[t.Name] = cty.ObjectVal(map[string]cty.Value{"has_primary": cty.BoolVal(t.HasPrimary)})
	}
	switch op {
	case "delete":
		delete(vals, name)
	default:
		vals[name] = cty.ObjectVal(map[string]cty.Value{"has_primary": cty.BoolVal(hasPrimary)})
	}
	if len(vals) == 0 {
		return cty.NilVal
	}
	return cty.ObjectVal(vals)
}
