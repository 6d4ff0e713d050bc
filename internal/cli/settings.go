package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/urfave/cli/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
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
// directory (--repo), as the file that sets it is. A workdir setting that is
// refused (repoWorkdir) is kept in g.workdirErr, which openWorkdir returns.
func useWorkdirSetting(c *cli.Context, g *globals) {
	s, _, _ := repoSettings(g)
	g.workdirErr = setWorkdir(c, g, s)
}

func setWorkdir(c *cli.Context, g *globals, s loader.Settings) error {
	if s.State != "" && globalSet(c, "state") == nil {
		g.state = s.State
	}
	if globalSet(c, "workdir") != nil {
		return nil
	}
	raw, _ := s.Data.Get("workdir").Str() // as written, also when the loader refused it
	if raw == "" {
		return nil
	}
	dir, err := repoWorkdir(g.repo, raw)
	if err != nil {
		file := s.File
		if file == "" {
			file = "fuelsync.yaml"
		}
		return &exitError{code: 1, msg: fmt.Sprintf("%s: workdir %q %v; nothing was changed (give the work directory with --workdir instead)",
			filepath.Join(g.repo, file), raw, err)}
	}
	g.workdir = dir
	return nil
}

// repoWorkdir is the work directory a repository's workdir setting names,
// relative to the repository directory repo; an error when the setting may
// not name it. A repository is untrusted input and fuelsync removes files in
// its work directory, so the setting must be a relative path inside the
// repository's working tree (loader.CheckWorkdirSetting), and what it names on
// disk, symlinks resolved, must be too, outside every .git; a bare
// repository, which has no working tree, takes no workdir setting.
func repoWorkdir(repo, setting string) (string, error) {
	if err := loader.CheckWorkdirSetting(setting); err != nil {
		return "", err
	}
	if isBareRepo(repo) {
		return "", errors.New("is a path in a bare repository, which has no working tree: it would be inside the repository's git directory")
	}
	dir := filepath.Join(repo, setting)
	repoReal, err := realPath(repo)
	if err != nil {
		return "", err
	}
	dirReal, err := realPath(dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(repoReal, dirReal)
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("is %s on disk (symlinks followed), which is not inside the repository's working tree", dirReal)
	}
	for _, comp := range strings.Split(rel, string(filepath.Separator)) {
		if strings.EqualFold(comp, ".git") {
			return "", fmt.Errorf("is %s on disk (symlinks followed), inside a .git directory", dirReal)
		}
	}
	return dir, nil
}

// loopSettings are the settings of watch and serve: their flags when given,
// else the repository's settings file, else the flags' defaults.
type loopSettings struct {
	Interval      time.Duration
	Publish       string
	PublishBranch string
	// Workdir is the work directory, with its state backend (--state).
	Workdir *state.Workdir
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
	if err := setWorkdir(c, g, s); err != nil {
		return loopSettings{}, err
	}
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
