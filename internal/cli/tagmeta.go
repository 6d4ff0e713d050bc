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
			scope, err := parseScope(c, "tags "+op)
			if err != nil {
				return err
			}
			return editTagMeta(g, c, scope, op, c.Args().First())
		},
	}
}

// editTagMeta is tags create|update|delete (op) of tag name: the edit of the
// cluster's spec or the release's tags file, then validated and written
// (finishEdit), or nothing to change.
func editTagMeta(g *globals, c *cli.Context, scope scopeArgs, op, name string) error {
	src, repo, err := loadForEdit(g)
	if err != nil {
		return err
	}
	t := tagMetaEdit{op: op, name: name, hasPrimary: c.Bool("has-primary")}
	var ch *specChange
	if scope.cluster != "" {
		ch, err = t.clusterChange(src, repo, scope.cluster)
	} else {
		ch, err = t.releaseChange(src, repo, scope.release)
	}
	if err != nil {
		return err
	}
	if ch.err == specedit.ErrNoChange || (ch.err == nil && string(ch.data) == string(ch.orig)) {
		return nothingToChange(g, src, ch.file, ch.summary)
	}
	if ch.err != nil {
		return &exitError{code: 1, msg: fmt.Sprintf("%s: %v; nothing written", ch.file, ch.err)}
	}
	return finishEdit(g, c, src, repo, ch.file, ch.orig, ch.data, ch.summary, ch.clusters)
}

// tagMetaEdit is a tags create, update or delete (op) of tag name, with
// has_primary (create, update).
type tagMetaEdit struct {
	op, name   string
	hasPrimary bool
}

// specChange is an edit of one file of the repository: its text before
// (orig) and after (data), or the editor's error (specedit.ErrNoChange when
// it changes nothing); what it says it did, and the clusters it touches.
type specChange struct {
	file       string
	orig, data []byte
	err        error
	summary    string
	clusters   []string
}

// value is the tag's metadata as written in YAML.
func (t tagMetaEdit) value() string {
	if t.op == "delete" {
		return "" // the key goes
	}
	return fmt.Sprintf("{has_primary: %t}", t.hasPrimary)
}

// summary says what the edit does: "tag NAME created (has_primary: B)".
func (t tagMetaEdit) summary() string {
	verb := map[string]string{"create": "created", "delete": "deleted", "update": "updated"}[t.op]
	summary := fmt.Sprintf("tag %s %s", t.name, verb)
	if t.op != "delete" {
		summary += fmt.Sprintf(" (has_primary: %t)", t.hasPrimary)
	}
	return summary
}

// clusterChange edits the tags: of cluster cname's spec (YAML or HCL), once
// the cluster's tags allow op.
func (t tagMetaEdit) clusterChange(src *source, repo *loader.Repo, cname string) (*specChange, error) {
	cl := repo.Cluster(cname)
	if cl == nil {
		return nil, &exitError{code: 1, msg: noCluster(cname, repo) + "; nothing written"}
	}
	if err := t.checkCluster(repo, cl); err != nil {
		return nil, err
	}
	ch := &specChange{file: cl.File, summary: t.summary(), clusters: []string{cl.Name}}
	var err error
	if ch.orig, err = fs.ReadFile(src.fsys, ch.file); err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	if strings.HasSuffix(ch.file, ".hcl") {
		ch.data, ch.err = specedit.SetHCLClusterAttr(ch.orig, ch.file, "tags", clusterTagsValue(cl.Tags, t.op, t.name, t.hasPrimary))
	} else {
		ch.data, ch.err = specedit.EditYAMLMap(ch.orig, specedit.MapEdit{Path: []string{"tags"}, Key: t.name, Value: t.value()})
	}
	return ch, nil
}

// checkCluster refuses op on cluster cl's tag: create of a tag it has,
// update of one it has not, delete of a tag a role lists or that the
// cluster does not declare itself.
func (t tagMetaEdit) checkCluster(repo *loader.Repo, cl *loader.Cluster) error {
	m, mdiags := render.Build(repo, cl)
	if m == nil || mdiags.HasErrors() {
		return &exitError{code: 1, msg: fmt.Sprintf("cluster %s does not validate; nothing written", cl.Name)}
	}
	own := slices.IndexFunc(cl.Tags, func(tm *loader.TagMeta) bool { return tm.Name == t.name }) >= 0
	existing := m.Tags[t.name]
	switch t.op {
	case "create":
		if existing != nil {
			return &exitError{code: 1, msg: fmt.Sprintf("tag %s already exists (%s); use tags update; nothing written", t.name, existing.Owner)}
		}
	case "update":
		if existing == nil {
			return &exitError{code: 1, msg: fmt.Sprintf("cluster %s has no tag %s; use tags create; nothing written", cl.Name, t.name)}
		}
	case "delete":
		for _, r := range m.Roles {
			if slices.Contains(r.Tags, t.name) {
				return &exitError{code: 1, msg: fmt.Sprintf("tag %s belongs to role %s and cannot be deleted; nothing written", t.name, r.Name)}
			}
		}
		if !own {
			if existing == nil {
				return &exitError{code: 1, msg: fmt.Sprintf("cluster %s has no tag %s; nothing written", cl.Name, t.name)}
			}
			return &exitError{code: 1, msg: fmt.Sprintf("tag %s is declared by the %s, not by cluster %s; nothing written", t.name, existing.Owner, cl.Name)}
		}
	}
	return nil
}

// releaseChange edits the YAML file that declares release relRef's tags,
// once the release's tags allow op.
func (t tagMetaEdit) releaseChange(src *source, repo *loader.Repo, relRef string) (*specChange, error) {
	rel, err := findRelease(repo, relRef)
	if err != nil {
		return nil, err
	}
	at, err := t.checkRelease(rel)
	if err != nil {
		return nil, err
	}
	ch := &specChange{file: at.Range.Filename, summary: fmt.Sprintf("release %s: %s", rel.Version, t.summary())}
	if strings.HasSuffix(ch.file, ".hcl") {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("release %s declares its tags in %s: edit its tag blocks there; nothing written", rel.Version, ch.file)}
	}
	if ch.orig, err = fs.ReadFile(src.fsys, ch.file); err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	e := specedit.MapEdit{AtLine: at.Range.Start.Line, AtCol: at.Range.Start.Column, Key: t.name, Value: t.value()}
	ch.data, ch.err = specedit.EditYAMLMap(ch.orig, e)
	return ch, nil
}

// checkRelease refuses op on release rel's tag (create of a tag it
// declares, update or delete of one it does not, delete of a tag a role
// lists) and returns the tag whose mapping the edit goes into: the tag
// itself, or for create the release's first tag.
func (t tagMetaEdit) checkRelease(rel *loader.Release) (*loader.TagMeta, error) {
	var at *loader.TagMeta
	for _, tm := range rel.Tags {
		if tm.Name == t.name || (t.op == "create" && at == nil) {
			at = tm
		}
	}
	exists := slices.IndexFunc(rel.Tags, func(tm *loader.TagMeta) bool { return tm.Name == t.name }) >= 0
	switch {
	case t.op == "create" && exists:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("release %s already declares tag %s; use tags update; nothing written", rel.Version, t.name)}
	case t.op != "create" && !exists:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("release %s declares no tag %s; nothing written", rel.Version, t.name)}
	case at == nil:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("release %s declares no tags yet: add its tags metadata by hand first; nothing written", rel.Version)}
	}
	if t.op == "delete" {
		for _, r := range rel.Roles {
			if slices.Contains(r.Tags, t.name) || (!r.HasTags && r.Name == t.name) {
				return nil, &exitError{code: 1, msg: fmt.Sprintf("tag %s belongs to role %s and cannot be deleted; nothing written", t.name, r.Name)}
			}
		}
	}
	return at, nil
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
