package cli

import (
	"io"
	"strings"
	"testing"
)

// TestDidYouMeanEveryGroup: for every command group (state, tags, roles,
// plugin, capabilities), each of its subcommands mistyped (a letter dropped,
// two letters swapped, a letter doubled) is named with a suggestion of that
// subcommand and the group's list, exit 1 (2 for capabilities, whose 1 means
// none found), under the group and under help; never urfave/cli's "No help
// topic".
func TestDidYouMeanEveryGroup(t *testing.T) {
	// One letter dropped, doubled or swapped with the next: each one edit
	// from the name and further from every other subcommand.
	typos := func(name string) []string {
		out := []string{name[:len(name)-1], name + name[len(name)-1:]}
		if len(name) > 3 {
			b := []byte(name)
			b[1], b[2] = b[2], b[1]
			out = append(out, string(b))
		}
		if len(name) == 4 {
			out = append(out, name[:1]+name[2:]) // lst
		}
		return out
	}
	groups := 0
	for _, group := range newApp(io.Discard, io.Discard).Commands {
		if len(group.Subcommands) == 0 || group.Hidden {
			continue
		}
		groups++
		var names []string
		for _, sc := range group.Subcommands {
			names = append(names, sc.Name)
		}
		for _, sc := range group.Subcommands {
			for _, typo := range typos(sc.Name) {
				if typo == "" || findCommand(group.Subcommands, typo) != nil {
					continue
				}
				want := `fuelsync: unknown ` + group.Name + ` command "` + typo + `"; did you mean "` + sc.Name + `"? the ` +
					group.Name + ` commands are ` + strings.Join(names, ", ") + "\n"
				code := 1
				if group.Name == "capabilities" {
					code = 2
				}
				for _, args := range [][]string{{"fuelsync", group.Name, typo}, {"fuelsync", "help", group.Name, typo}} {
					var stdout, stderr strings.Builder
					got := run(args, &stdout, &stderr)
					if args[1] == "help" {
						code = 1 // help's usage errors
					}
					if got != code || stderr.String() != want || stdout.Len() > 0 {
						t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(args, " "), got, stdout.String(), stderr.String(), code, want)
					}
				}
			}
		}
	}
	if groups < 5 {
		t.Errorf("%d command groups", groups)
	}
}
