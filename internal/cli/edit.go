package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing/fstest"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/specedit"
	"github.com/fuelsync/fuelsync/state"
)

// nodeEditFlags are the flags of tags assign|unassign and roles assign|unassign.
func nodeEditFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cluster", Required: true, Usage: "the cluster `C`"},
		&cli.StringFlag{Name: "node", Required: true, Usage: "the node `N`"},
		&cli.BoolFlag{Name: "commit", Usage: "commit the edit with git: the edited file alone, refused when it has uncommitted changes of its own"},
		&cli.StringFlag{Name: "message", Aliases: []string{"m"}, Usage: "the commit `MESSAGE` (default: one saying what changed)"},
		&cli.StringFlag{Name: "author", Usage: "the commit's author `NAME <EMAIL>` (default: from git config)"},
	}
}

// nodeEditCommand is tags|roles assign|unassign: kind is "tags" or "roles".
func nodeEditCommand(kind, op string, stdout, stderr io.Writer) *cli.Command {
	what := map[string]string{"tags": "TAG", "roles": "ROLE"}[kind]
	return &cli.Command{
		Name:         op,
		Usage:        fmt.Sprintf("%s %s on a node: an edit of the cluster spec, validated before it is written", op, kind),
		ArgsUsage:    what + "...",
		OnUsageError: usageError,
		Description: fmt.Sprintf("Edits the cluster spec file in place (YAML through the node API, HCL as text at its parser's positions:\n"+
			"everything else stays byte for byte), after checking that the result is valid; prints the\n"+
			"file's diff and what the edit changes on the nodes. With --commit, commits that file alone;\n"+
			"it refuses, writing nothing, when the file has uncommitted changes (they would go into the\n"+
			"commit unsaid), is staged, or is not committed yet.\n"+
			"%s", map[string]string{
			"tags":  "assign adds a tag to the node's tags.assign (or takes it out of tags.unassign); unassign\ntakes it out of tags.assign, or adds a role's tag to tags.unassign.",
			"roles": "assign adds roles to the node's roles; unassign removes them.",
		}[kind]),
		Flags: nodeEditFlags(),
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() == 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("%s %s needs at least one %s", kind, op, what)}
			}
			return editNode(g, c, kind, op, c.Args().Slice())
		},
	}
}

// editNode runs one node edit from loading to writing (and committing).
func editNode(g *globals, c *cli.Context, kind, op string, items []string) error {
	src, repo, err := loadForEdit(g)
	if err != nil {
		return err
	}
	clusterName, nodeName := c.String("cluster"), c.String("node")
	cl := repo.Cluster(clusterName)
	if cl == nil {
		return &exitError{code: 1, msg: noCluster(clusterName, repo) + "; nothing written"}
	}
	var node *loader.Node
	var nodes []string
	for _, n := range cl.Nodes {
		nodes = append(nodes, n.Name)
		if n.Name == nodeName {
			node = n
		}
	}
	if node == nil {
		return &exitError{code: 1, msg: fmt.Sprintf("cluster %s has no node %q; nodes: %s; nothing written", cl.Name, nodeName, strings.Join(nodes, ", "))}
	}
	before, bdiags := render.Build(repo, cl)
	if before == nil || bdiags.HasErrors() {
		return &exitError{code: 1, msg: fmt.Sprintf("cluster %s does not validate; nothing written", cl.Name)}
	}
	edits, summary, err := nodeEdits(kind, op, node, before.NodeTags[nodeName], items)
	if err != nil {
		return &exitError{code: 1, msg: err.Error() + "; nothing written"}
	}

	// Apply the edits to the file's bytes.
	file := cl.File
	orig, err := fs.ReadFile(src.fsys, file)
	if err != nil {
		return &exitError{code: 1, msg: err.Error()}
	}
	data := orig
	for _, e := range edits {
		var out []byte
		if strings.HasSuffix(file, ".hcl") {
			out, err = specedit.EditHCL(data, file, e, currentList(node, e.Path))
		} else {
			out, err = specedit.EditYAML(data, e)
		}
		if errors.Is(err, specedit.ErrNoChange) {
			continue
		}
		if err != nil {
			return &exitError{code: 1, msg: fmt.Sprintf("%s: %v; nothing written", file, err)}
		}
		data = out
		if strings.HasSuffix(file, ".hcl") { // the next edit sees this one
			node = reloadNode(data, src, file, cl.Name, nodeName, node)
		}
	}
	if string(data) == string(orig) {
		return nothingToChange(g, src, file, summary)
	}

	return finishEdit(g, c, src, repo, file, orig, data, summary, []string{cl.Name})
}

// finishEdit validates the repository with file's content replaced by data,
// writes the file, commits it with --commit, and prints the file's diff and what
// the edit changes in clusters (all when nil) — or, when the edit would make the
// repository invalid, its diagnostics, writing nothing.
func finishEdit(g *globals, c *cli.Context, src *source, repo *loader.Repo, file string, orig, data []byte, summary string, clusters []string) error {
	edited := overlayFS(src.fsys, file, data)
	repo2, diags := loader.Load(edited, loadOptions(nil))
	after, more := render.Render(repo2, render.Options{Clusters: clusters})
	diags = loader.SortDiagnostics(append(diags, more...))
	if diags.HasErrors() {
		// The errors first; the repository's warnings, which have nothing to
		// do with the refusal most of the time, summarised after them.
		var errs hcl.Diagnostics
		nwarn := 0
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				errs = append(errs, d)
			} else {
				nwarn++
			}
		}
		g.writeDiagnostics(g.stderr, errs, repo2.Sources.Files(), src.prefix)
		msg := fmt.Sprintf("the edit (%s) would make the repository invalid; nothing written", summary)
		if nwarn > 0 {
			msg += fmt.Sprintf("\n(and %s, not shown: %s shows them)", plural(nwarn, "warning"), commandLine(g, "validate"))
		}
		return &exitError{code: 1, msg: msg}
	}
	old, _ := render.Render(repo, render.Options{Clusters: clusters})
	oldSide, err := diff.RenderedSide(old, "before", version, nil)
	if err != nil {
		return &exitError{code: 1, msg: err.Error()}
	}
	newSide, err := diff.RenderedSide(after, "after", version, oldSide.Digests)
	if err != nil {
		return &exitError{code: 1, msg: err.Error()}
	}
	cs, err := diff.Compute(oldSide, newSide)
	if err != nil {
		return &exitError{code: 1, msg: err.Error()}
	}

	if c.Bool("commit") {
		if err := checkCommittable(g.repo, file, orig); err != nil {
			return &exitError{code: 1, msg: fmt.Sprintf("--commit: %v; nothing written", err)}
		}
	}
	path := filepath.Join(g.repo, filepath.FromSlash(file))
	out := g.stdout
	if g.quiet || g.format == formatJSON {
		out = io.Discard // -q: only problems; json: one document, below
	}
	if err := state.WriteFileAtomic(path, data); err != nil {
		return &exitError{code: 1, msg: err.Error()}
	}
	doc := editJSON{FormatVersion: formatVersion, Edited: true, File: path, Summary: summary, Changes: cs}
	fmt.Fprintf(out, "edited %s: %s\n\n", path, summary)
	if c.Bool("commit") {
		msg := c.String("message")
		if msg == "" {
			msg = summary
			if len(clusters) == 1 {
				msg = clusters[0] + ": " + summary
			}
		}
		hash, err := commitFile(g.repo, file, msg, c.String("author"))
		if err != nil {
			return &exitError{code: 1, msg: fmt.Sprintf("the file is edited but not committed: %v", err)}
		}
		fmt.Fprintf(out, "committed %.12s: %s\n\n", hash, msg)
		doc.Commit = hash
	}
	fd := diff.File(file, orig, data, 3)
	doc.FileDiff = fd.Text
	if g.format == formatJSON {
		return writeJSON(g.stdout, doc)
	}
	fmt.Fprintln(out, strings.TrimRight(fd.Text, "\n"))
	fmt.Fprintln(out)
	fmt.Fprint(out, cs.Text(changeColors(g, out)))
	return nil
}

// editJSON is the result of a tags or roles edit with --format json.
type editJSON struct {
	FormatVersion string `json:"format_version"`
	// Edited is false when the file already said so: nothing written.
	Edited  bool   `json:"edited"`
	File    string `json:"file"`
	Summary string `json:"summary"`
	// Commit is the commit made with --commit.
	Commit string `json:"commit,omitempty"`
	// FileDiff is the unified diff of the file.
	FileDiff string `json:"file_diff,omitempty"`
	// Changes are what the edit changes on the nodes (as plan's).
	Changes *diff.ChangeSet `json:"changes,omitempty"`
}

// nothingToChange reports an edit the file already had.
func nothingToChange(g *globals, src *source, file, summary string) error {
	if g.format == formatJSON {
		return writeJSON(g.stdout, editJSON{FormatVersion: formatVersion, File: filepath.Join(g.repo, filepath.FromSlash(file)), Summary: summary})
	}
	fmt.Fprintf(g.stdout, "nothing to change: %s\n", summary)
	return nil
}

// loadForEdit loads the working tree an edit will change; it must load without
// errors.
func loadForEdit(g *globals) (*source, *loader.Repo, error) {
	if g.rev != "" {
		return nil, nil, &exitError{code: 1, msg: "edits change the working tree; --rev reads a commit"}
	}
	return loadRepoOr(g, "the repository does not validate as it is; fix it first; nothing written")
}

// nodeEdits turns an operation into list edits, with a summary of what it does.
func nodeEdits(kind, op string, node *loader.Node, nt *render.NodeTags, items []string) ([]specedit.Edit, string, error) {
	refs := func(rs []loader.Ref) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	add := func(xs ...string) func([]string) []string {
		return func(cur []string) []string {
			for _, x := range xs {
				if !slices.Contains(cur, x) {
					cur = append(cur, x)
				}
			}
			return cur
		}
	}
	remove := func(xs ...string) func([]string) []string {
		return func(cur []string) []string {
			return slices.DeleteFunc(cur, func(s string) bool { return slices.Contains(xs, s) })
		}
	}
	summary := fmt.Sprintf("node %s: %s %s %s", node.Name, map[string]string{"tags": "tag", "roles": "role"}[kind], strings.Join(items, ", "), op+"ed")
	switch kind + " " + op {
	case "roles assign":
		return []specedit.Edit{{Node: node.Name, Path: []string{"roles"}, Set: add(items...)}}, summary, nil
	case "roles unassign":
		roles := refs(node.Roles)
		for _, r := range items {
			if !slices.Contains(roles, r) {
				return nil, "", fmt.Errorf("node %s has no role %s (roles: %s)", node.Name, r, strings.Join(roles, ", "))
			}
		}
		if len(roles) == len(items) {
			return nil, "", fmt.Errorf("node %s would have no role left; remove the node from the cluster spec instead", node.Name)
		}
		return []specedit.Edit{{Node: node.Name, Path: []string{"roles"}, Set: remove(items...)}}, summary, nil
	case "tags assign":
		var edits []specedit.Edit
		unassigned := refs(node.Unassign)
		for _, t := range items {
			if slices.Contains(unassigned, t) {
				edits = append(edits, specedit.Edit{Node: node.Name, Path: []string{"tags", "unassign"}, Set: remove(t)})
			} else {
				edits = append(edits, specedit.Edit{Node: node.Name, Path: []string{"tags", "assign"}, Set: add(t)})
			}
		}
		return edits, summary, nil
	case "tags unassign":
		var edits []specedit.Edit
		assigned := refs(node.Assign)
		for _, t := range items {
			fromRole := false
			if nt != nil {
				for _, s := range nt.Sources[t] {
					fromRole = fromRole || strings.HasPrefix(s, "role ")
				}
			}
			if nt != nil && slices.Contains(nt.Sources[t], "role name") {
				return nil, "", fmt.Errorf("tag %s is the name of node %s's role %s and cannot be unassigned; unassign the role instead (roles unassign)", t, node.Name, t)
			}
			if !slices.Contains(assigned, t) && !fromRole {
				return nil, "", fmt.Errorf("node %s does not carry tag %s", node.Name, t)
			}
			if slices.Contains(assigned, t) {
				edits = append(edits, specedit.Edit{Node: node.Name, Path: []string{"tags", "assign"}, Set: remove(t)})
			}
			if fromRole {
				edits = append(edits, specedit.Edit{Node: node.Name, Path: []string{"tags", "unassign"}, Set: add(t)})
			}
		}
		return edits, summary, nil
	}
	return nil, "", fmt.Errorf("unknown operation %s %s", kind, op)
}

// currentList is the node's list at path, as the loader read it.
func currentList(n *loader.Node, path []string) []string {
	var refs []loader.Ref
	switch strings.Join(path, ".") {
	case "roles":
		refs = n.Roles
	case "tags.assign":
		refs = n.Assign
	case "tags.unassign":
		refs = n.Unassign
	}
	var out []string
	for _, r := range refs {
		out = append(out, r.Name)
	}
	return out
}

// reloadNode reads the node again from an edited HCL file, so that a second edit
// sees the first; the old node when that fails.
func reloadNode(data []byte, src *source, file, cluster, name string, old *loader.Node) *loader.Node {
	repo, _ := loader.Load(overlayFS(src.fsys, file, data), loadOptions(nil))
	if cl := repo.Cluster(cluster); cl != nil {
		for _, n := range cl.Nodes {
			if n.Name == name {
				return n
			}
		}
	}
	return old
}

// overlayFS is fsys with file's content replaced by data.
func overlayFS(fsys fs.FS, file string, data []byte) fs.FS {
	return &overlay{FS: fsys, name: file, data: fstest.MapFS{file: &fstest.MapFile{Data: data, Mode: 0o644}}}
}

type overlay struct {
	fs.FS
	name string
	data fstest.MapFS
}

func (o *overlay) Open(name string) (fs.File, error) {
	if name == o.name {
		return o.data.Open(name)
	}
	return o.FS.Open(name)
}

// gitFile opens the git repository holding file (relative to repoPath) and
// returns its worktree and the file's path in it.
func gitFile(repoPath, file string) (*git.Repository, *git.Worktree, string, error) {
	r, err := git.PlainOpenWithOptions(repoPath, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, nil, "", err
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, nil, "", err
	}
	abs, err := filepath.Abs(filepath.Join(repoPath, filepath.FromSlash(file)))
	if err != nil {
		return nil, nil, "", err
	}
	rel, err := filepath.Rel(wt.Filesystem.Root(), abs)
	if err != nil {
		return nil, nil, "", err
	}
	return r, wt, filepath.ToSlash(rel), nil
}

// checkCommittable says why committing an edit of file, whose content is now
// orig, would commit more than the edit: orig differs from the file in HEAD
// (uncommitted changes of its own), the file is staged, or it is not committed
// at all.
func checkCommittable(repoPath, file string, orig []byte) error {
	r, wt, rel, err := gitFile(repoPath, file)
	if err != nil {
		return err
	}
	head, err := r.Head()
	if err != nil {
		return fmt.Errorf("%s is not committed yet (the repository has no commit): commit it first, so that the commit holds the edit alone", rel)
	}
	commit, err := r.CommitObject(head.Hash())
	if err != nil {
		return err
	}
	f, err := commit.File(rel)
	if errors.Is(err, object.ErrFileNotFound) {
		return fmt.Errorf("%s is not committed yet: commit it first, so that the commit holds the edit alone", rel)
	}
	if err != nil {
		return err
	}
	committed, err := f.Contents()
	if err != nil {
		return err
	}
	if committed != string(orig) {
		return fmt.Errorf("%s has uncommitted changes of its own (git diff HEAD -- %s shows them): commit or stash them first, or edit without --commit", rel, rel)
	}
	st, err := wt.Status()
	if err != nil {
		return err
	}
	if fst, ok := st[rel]; ok && fst.Staging != git.Unmodified {
		return fmt.Errorf("%s has staged changes: commit or unstage them first, so that the commit holds the edit alone", rel)
	}
	return nil
}

// commitFile commits file (repository-relative) alone: anything else already
// staged is refused, so that the commit touches exactly that file.
func commitFile(repoPath, file, msg, author string) (string, error) {
	_, wt, rel, err := gitFile(repoPath, file)
	if err != nil {
		return "", err
	}
	st, err := wt.Status()
	if err != nil {
		return "", err
	}
	for p, s := range st {
		if p != rel && s.Staging != git.Unmodified && s.Staging != git.Untracked {
			return "", fmt.Errorf("%s is already staged; commit or unstage it first, so that the commit holds the edit alone", p)
		}
	}
	if _, err := wt.Add(rel); err != nil {
		return "", err
	}
	opts := &git.CommitOptions{}
	if author != "" {
		name, email, ok := strings.Cut(author, "<")
		if !ok || !strings.HasSuffix(email, ">") {
			return "", fmt.Errorf("--author must be \"Name <email>\", not %q", author)
		}
		opts.Author = &object.Signature{Name: strings.TrimSpace(name), Email: strings.TrimSuffix(email, ">"), When: time.Now()}
	}
	h, err := wt.Commit(msg, opts)
	if err != nil {
		return "", err
	}
	return h.String(), nil
}
