package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/render/components"
)

func componentsCommand(stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:         "components",
		Usage:        "list the components a release offers, and their state for a cluster",
		ArgsUsage:    " ",
		OnUsageError: usageError,
		Description: "Lists the component registry of a release: its own components and those of the plugins\n" +
			"compatible with it, with the component-registry API's keys (name, label, description, weight,\n" +
			"compatible, incompatible, requires). With --cluster, each component's state for the cluster's\n" +
			"selection, as the creation wizard shows it: selected, available, or disabled with the reason,\n" +
			"and whether its compatible list is satisfied (the green light).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "release", Usage: "release `R`: a version, a name or name@version (default: the cluster's)"},
			&cli.StringFlag{Name: "cluster", Usage: "show the state of each component for cluster `C`'s selection"},
			formatFlag(),
		},
		Action: func(c *cli.Context) error {
			g, err := readGlobals(c, stdout, stderr)
			if err != nil {
				return err
			}
			if c.NArg() > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("components takes no arguments (got %q); use --release R", c.Args().First())}
			}
			relRef, clusterName := c.String("release"), c.String("cluster")
			if relRef == "" && clusterName == "" {
				return &exitError{code: 1, msg: "components needs --release R or --cluster C"}
			}
			res, err := componentsOf(g, relRef, clusterName)
			if err != nil {
				return err
			}
			if err := componentsView(g, res); err != nil {
				return err
			}
			if res.problems.HasErrors() {
				return exitCode(1)
			}
			return nil
		},
	}
}

// componentsResult is what components prints: a release's component
// registry and, for a cluster, each component's state for its selection and
// the selection's problems.
type componentsResult struct {
	src      *source
	repo     *loader.Repo
	rel      *loader.Release
	cl       *loader.Cluster // nil without --cluster
	reg      *components.Registry
	states   []components.State
	problems hcl.Diagnostics
}

// componentsOf is the registry of release relRef (by default cluster
// clusterName's) and, with clusterName, the states of the cluster's
// selection.
func componentsOf(g *globals, relRef, clusterName string) (*componentsResult, error) {
	src, repo, err := loadRepo(g)
	if err != nil {
		return nil, err
	}
	res := &componentsResult{src: src, repo: repo}
	if clusterName != "" {
		if res.cl = repo.Cluster(clusterName); res.cl == nil {
			return nil, &exitError{code: 1, msg: noCluster(clusterName, repo)}
		}
		if relRef == "" {
			relRef = res.cl.Release
		}
	}
	if res.rel, err = findRelease(repo, relRef); err != nil {
		return nil, err
	}
	if res.cl != nil && !sameRelease(repo, res.cl.Release, res.rel) {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("cluster %s uses release %s, not %s", res.cl.Name, res.cl.Release, relRef)}
	}
	var regDiags, problems hcl.Diagnostics
	res.reg, regDiags = render.Registry(repo, res.rel)
	if res.cl != nil {
		var selected []string
		for _, r := range res.cl.Components {
			selected = append(selected, r.Name)
		}
		res.states = res.reg.States(selected)
		problems = render.ComponentProblems(res.reg, res.cl, res.rel)
	}
	res.problems = loader.SortDiagnostics(append(regDiags, problems...))
	return res, nil
}

// componentsView prints the registry (and the states): JSON with the
// problems in it, or text with the problems on stderr.
func componentsView(g *globals, res *componentsResult) error {
	if g.format == formatJSON {
		return writeJSON(g.stdout, componentsJSON(res.rel, res.cl, res.reg, res.states, res.problems, res.src.prefix))
	}
	g.writeDiagnostics(g.stderr, res.problems, res.repo.Sources.Files(), res.src.prefix)
	writeComponentsText(g.stdout, res.rel, res.cl, res.reg, res.states)
	return nil
}

// clusterModel is the merged model of the cluster named name, for the commands
// that list what a cluster has (tags list, roles list); a cluster that does not
// validate has its problems written to stderr.
func clusterModel(g *globals, src *source, repo *loader.Repo, name string) (*loader.Cluster, *render.Model, error) {
	cl := repo.Cluster(name)
	if cl == nil {
		return nil, nil, &exitError{code: 1, msg: noCluster(name, repo)}
	}
	m, diags := render.Build(repo, cl)
	if m == nil || diags.HasErrors() {
		g.writeDiagnostics(g.stderr, diags, repo.Sources.Files(), src.prefix)
		return nil, nil, &exitError{code: 1, msg: fmt.Sprintf("cluster %s does not validate", cl.Name)}
	}
	return cl, m, nil
}

func clusterNames(repo *loader.Repo) string {
	var names []string
	for _, c := range repo.Clusters {
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// noCluster is the message for a --cluster the repository does not have: a
// suggestion when a cluster's name is close, and the clusters, sorted.
func noCluster(name string, repo *loader.Repo) string {
	var names []string
	for _, c := range repo.Clusters {
		names = append(names, c.Name)
	}
	msg := fmt.Sprintf("no cluster %q", name)
	if s := suggest(name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg + "; clusters: " + clusterNames(repo)
}

func findRelease(repo *loader.Repo, ref string) (*loader.Release, error) {
	rels := repo.FindRelease(ref)
	switch {
	case len(repo.Releases) == 0:
		return nil, &exitError{code: 1, msg: loader.MsgNoReleases}
	case len(rels) == 0:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("unknown release %q; releases: %s", ref, releaseNames(repo))}
	case len(rels) > 1:
		return nil, &exitError{code: 1, msg: fmt.Sprintf("release %q matches %d releases; write name@version: %s", ref, len(rels), releaseNames(repo))}
	}
	return rels[0], nil
}

func sameRelease(repo *loader.Repo, ref string, rel *loader.Release) bool {
	rels := repo.FindRelease(ref)
	return len(rels) == 1 && rels[0] == rel
}

func releaseNames(repo *loader.Repo) string {
	var parts []string
	for _, r := range repo.Releases {
		parts = append(parts, fmt.Sprintf("%s (%s)", r.Version, r.Name))
	}
	return strings.Join(parts, ", ")
}

// componentJSON is one component of `components --format json`: the API's keys, and
// with --cluster its status for the cluster's selection.
type componentJSON struct {
	components.APIComponent
	Plugin string           `json:"plugin,omitempty"`
	Status *componentStatus `json:"status,omitempty"`
}

type componentStatus struct {
	State      string `json:"state"`
	Reason     string `json:"reason,omitempty"`
	Compatible bool   `json:"compatible"`
}

func componentsJSON(rel *loader.Release, cl *loader.Cluster, reg *components.Registry, states []components.State, problems hcl.Diagnostics, prefix string) any {
	all := reg.All()
	api := reg.API()
	list := make([]componentJSON, len(api))
	for i := range api {
		list[i] = componentJSON{APIComponent: api[i], Plugin: all[i].Plugin}
		if states != nil {
			s := states[i]
			list[i].Status = &componentStatus{State: s.State, Reason: s.Reason, Compatible: s.Compatible}
		}
	}
	doc := componentsDoc{FormatVersion: formatVersion, Release: releaseRef{rel.Name, rel.Version}, Components: list}
	if cl != nil {
		valid := !problems.HasErrors()
		doc.Cluster, doc.Valid, doc.Diagnostics = cl.Name, &valid, toJSONDiagnostics(problems, prefix)
	}
	return doc
}

// componentsDoc is the document `components --format json` prints.
type componentsDoc struct {
	FormatVersion string          `json:"format_version"`
	Release       releaseRef      `json:"release"`
	Cluster       string          `json:"cluster,omitempty"`
	Valid         *bool           `json:"valid,omitempty"`
	Components    []componentJSON `json:"components"`
	Diagnostics   any             `json:"diagnostics,omitempty"`
}

type releaseRef struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func writeComponentsText(w io.Writer, rel *loader.Release, cl *loader.Cluster, reg *components.Registry, states []components.State) {
	all := reg.All()
	fromPlugins := 0
	for _, c := range all {
		if c.Plugin != "" {
			fromPlugins++
		}
	}
	fmt.Fprintf(w, "Release %s (%s): %s, %d from the release and %d from plugins\n",
		safetext.Line(rel.Version), safetext.Line(rel.Name), plural(len(all), "component"), len(all)-fromPlugins, fromPlugins)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if cl == nil {
		fmt.Fprintln(tw, "NAME\tFROM\tREQUIRES\tINCOMPATIBLE")
		for _, c := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", safetext.Line(c.Name), safetext.Line(from(c)), safetext.Line(dash(requiresText(c))), safetext.Line(dash(relationNames(c.Incompatible))))
		}
		tw.Flush()
		return
	}
	counts := map[string]int{}
	for _, s := range states {
		counts[s.State]++
	}
	fmt.Fprintf(w, "Cluster %s: %d selected, %d available, %d disabled\n", safetext.Line(cl.Name),
		counts[components.StateSelected], counts[components.StateAvailable], counts[components.StateDisabled])
	fmt.Fprintln(tw, "STATE\tNAME\tFROM\tCOMPATIBLE\tREASON")
	for i, c := range all {
		s := states[i]
		ok := ""
		if s.Compatible {
			ok = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.State, safetext.Line(c.Name), safetext.Line(from(c)), dash(ok), safetext.Line(dash(s.Reason)))
	}
	tw.Flush()
}

func from(c *components.Component) string {
	if c.Plugin != "" {
		return "plugin " + c.Plugin
	}
	return "release"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func relationNames(rels []components.Relation) string {
	names := make([]string, len(rels))
	for i, r := range rels {
		names[i] = r.Name
	}
	return strings.Join(names, ",")
}

func requiresText(c *components.Component) string {
	var parts []string
	for _, r := range c.Requires {
		names := strings.Join(r.Names, ",")
		if r.Predicate != "" {
			names = r.Predicate + "(" + names + ")"
		}
		parts = append(parts, names)
	}
	return strings.Join(parts, " ")
}
