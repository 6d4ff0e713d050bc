package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reconcile"
)

// repoSettings reads the settings file (fuelsync.yaml|hcl) of the repository
// revision the command reads. A remote repository's settings are not read (they
// are not there before the clone), nor those of a repository that does not open
// (the command reports that itself). Settings with errors are left out of the
// result; the diagnostics say why.
func repoSettings(g *globals) (loader.Settings, *source, hcl.Diagnostics) {
	if isRemote(g.repo) {
		return loader.Settings{}, nil, nil
	}
	src, err := openSource(g)
	if err != nil {
		return loader.Settings{}, nil, nil
	}
	s, diags := loader.LoadSettings(src.fsys)
	return s, src, diags
}

// useWorkdirSetting sets g.workdir from the repository's workdir setting unless
// --workdir is given. A relative workdir is relative to the repository
// directory (--repo), as the file that sets it is.
func useWorkdirSetting(c *cli.Context, g *globals) {
	s, _, _ := repoSettings(g)
	setWorkdir(c, g, s)
}

func setWorkdir(c *cli.Context, g *globals, s loader.Settings) {
	if s.State != "" && globalSet(c, "state") == nil {
		g.state = s.State
	}
	if s.Workdir != "" && globalSet(c, "workdir") == nil {
		g.workdir = s.Workdir
		if !filepath.IsAbs(s.Workdir) {
			g.workdir = filepath.Join(g.repo, s.Workdir)
		}
	}
}

// loopSettings are the settings of watch and serve: their flags when given,
// else the repository's settings file, else the flags' defaults.
type loopSettings struct {
	Interval      time.Duration
	Publish       string
	PublishBranch string
	// Workdir is the work directory, with its state backend (--state).
	Workdir *reconcile.Workdir
}

// loopSettingsFor reads the settings of watch and serve (and the work directory
// into g, as useWorkdirSetting). An error in one of the settings it uses stops
// the daemon before it starts.
func loopSettingsFor(c *cli.Context, g *globals) (loopSettings, error) {
	s, src, diags := repoSettings(g)
	if diags.HasErrors() {
		var lines []string
		for _, d := range loader.SortDiagnostics(diags) {
			if d.Severity != hcl.DiagError {
				continue
			}
			at := ""
			if d.Subject != nil {
				at = fmt.Sprintf("%s%s:%d:%d: ", src.prefix, d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
			}
			lines = append(lines, at+d.Summary)
		}
		return loopSettings{}, &exitError{code: 1, msg: "the repository's settings do not read:\n" + strings.Join(lines, "\n")}
	}
	setWorkdir(c, g, s)
	ls := loopSettings{Interval: c.Duration("interval"), Publish: c.String("publish"), PublishBranch: c.String("publish-branch")}
	if s.Interval != "" && !c.IsSet("interval") {
		ls.Interval, _ = time.ParseDuration(s.Interval) // checked by the loader
	}
	if s.Publish != "" && !c.IsSet("publish") {
		ls.Publish = s.Publish
	}
	if s.PublishBranch != "" && !c.IsSet("publish-branch") {
		ls.PublishBranch = s.PublishBranch
	}
	w, err := openWorkdir(c, g)
	if err != nil {
		return loopSettings{}, err
	}
	ls.Workdir = w
	return ls, nil
}
