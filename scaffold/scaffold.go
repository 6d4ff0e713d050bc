// Package scaffold writes new plugin packages (fuelsync plugin create): a role named
// after the plugin with its metadata, volumes and a task group, for package_version
// 4.0.0, 5.0.0 or 6.0.0, as a plugin extending releases or as a release-as-a-plugin,
// in YAML or as one plugin.hcl. The files are returned, not written: the caller
// checks them (Check, which also serves plugin check) and writes them.
package scaffold

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"
)

// PackageVersions are the package versions plugin create writes.
var PackageVersions = []string{"4.0.0", "5.0.0", "6.0.0"}

var (
	reName      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_-]+$`) })
	reRole      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-zA-Z_-]+$`) })
	reComponent = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(hypervisor|network|storage|additional_service):([0-9a-z_-]+:)*[0-9a-z_-]+$`)
	})
)

// Compat is a release the plugin extends (a compatibility record).
type Compat struct {
	OS, Version string
}

// Options describe the plugin to write.
type Options struct {
	Name           string
	PackageVersion string // 4.0.0, 5.0.0 or 6.0.0
	// Release writes a release-as-a-plugin package (its release is <name>-1.0).
	Release bool
	// Roles are more roles besides the one named after the plugin.
	Roles []string
	// Components are components the plugin offers (type:name...).
	Components []string
	Format     string // yaml or hcl
	// Releases are the releases a plugin extends (not for Release).
	Releases []Compat
}

// ReleaseVersion is the version of the release a release plugin defines.
func (o *Options) ReleaseVersion() string { return o.Name + "-1.0" }

// Check returns every problem with the options, one message each.
func (o *Options) Check() []string {
	var out []string
	if !reName().MatchString(o.Name) {
		out = append(out, fmt.Sprintf("invalid plugin name %q: a plugin name has only lowercase letters, digits, '_' and '-' (^[a-z0-9_-]+$)", o.Name))
	}
	if !slices.Contains(PackageVersions, o.PackageVersion) {
		out = append(out, fmt.Sprintf("unknown package version %q: plugin create writes %s", o.PackageVersion, strings.Join(PackageVersions, ", ")))
	}
	for _, r := range o.Roles {
		if !reRole().MatchString(r) {
			out = append(out, fmt.Sprintf("invalid role name %q: a role name has only letters, digits, '_' and '-' (^[0-9a-zA-Z_-]+$)", r))
		}
	}
	for _, c := range o.Components {
		if !reComponent().MatchString(c) {
			out = append(out, fmt.Sprintf("invalid component name %q: it must be <type>:<name>, the type one of hypervisor, network, storage, additional_service (%s)", c, reComponent()))
		}
	}
	if o.Release && o.PackageVersion == "4.0.0" {
		out = append(out, "--release needs package_version 5.0.0 or later: a release-as-a-plugin (is_release) is a 5.0.0 feature")
	}
	if o.Format != "yaml" && o.Format != "hcl" {
		out = append(out, fmt.Sprintf("unknown format %q: yaml or hcl", o.Format))
	}
	if !o.Release && len(o.Releases) == 0 {
		out = append(out, "no release to extend: the repository defines none; name one with --for-release, or write a release with --release")
	}
	return out
}

// model is what the templates see.
type model struct {
	*Options
	Title      string
	AllRoles   []string
	Components []component
	Tags       bool // node_tags.yaml (6.0.0)
	V4         bool // 4.0.0: fuel_version, is_hotpluggable and mode are required
}

type component struct {
	Name, Label string
	ML2         bool // an ML2 driver: requires network:neutron:core:ml2
}

// Files returns the files of the plugin, relative to its directory.
func Files(o Options) (map[string][]byte, error) {
	if problems := o.Check(); len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	m := &model{
		Options:  &o,
		Title:    titleOf(o.Name),
		AllRoles: append([]string{o.Name}, o.Roles...),
		Tags:     o.PackageVersion == "6.0.0" || o.Release,
		V4:       o.PackageVersion == "4.0.0",
	}
	for _, c := range o.Components {
		m.Components = append(m.Components, component{
			Name:  c,
			Label: titleOf(c[strings.LastIndexByte(c, ':')+1:]),
			ML2:   strings.HasPrefix(c, "network:neutron:ml2:"),
		})
	}
	files := map[string][]byte{
		"deployment_scripts/.gitkeep":  nil,
		"repositories/ubuntu/.gitkeep": nil,
	}
	var set *template.Template
	if o.Format == "hcl" {
		set = hclTemplates()
	} else {
		set = yamlTemplates()
	}
	for _, t := range set.Templates() {
		name := t.Name()
		if !strings.Contains(name, ".") || !wanted(name, m) {
			continue
		}
		var b bytes.Buffer
		if err := t.Execute(&b, m); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		data := b.Bytes()
		if strings.HasSuffix(name, ".hcl") {
			data = alignHCL(data) // aligned equals signs and comments
		}
		files[name] = data
	}
	return files, nil
}

// wanted says whether the template name is written for m: a release plugin has
// its data in release/ and graphs/, an extending plugin in the fixed files.
func wanted(name string, m *model) bool {
	release := strings.HasPrefix(name, "release/") || strings.HasPrefix(name, "graphs/")
	switch {
	case name == "metadata.yaml" || name == "plugin.hcl":
		return true
	case release != m.Release:
		return false
	case strings.HasSuffix(name, "components.yaml"):
		return len(m.Components) > 0
	case name == "node_tags.yaml":
		return m.Tags
	}
	return true
}

// titleOf is "Foo Bar" for foo-bar.
func titleOf(name string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' })
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}
