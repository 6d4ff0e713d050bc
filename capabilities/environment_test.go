package capabilities

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

func tmpl(caps string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("heat_template_version: pike\ncapabilities: " + caps + "\nresources: {}\n")}
}

// tht is a small TripleO-like tree: RabbitMQ in four flavours, Pacemaker pinned.
func tht() fstest.MapFS {
	return fstest.MapFS{
		"tht/puppet/services/rabbitmq.yaml":           tmpl("{deployment: puppet, ha: none}"),
		"tht/puppet/services/pacemaker/rabbitmq.yaml": tmpl("{deployment: puppet, ha: pacemaker}"),
		"tht/docker/services/rabbitmq.yaml":           {Data: []byte("heat_template_version: pike\ncapabilities: {deployment: docker, ha: none}\nresources:\n  RabbitMQBase:\n    type: ../../puppet/services/rabbitmq.yaml\n")},
		"tht/docker/services/pacemaker/rabbitmq.yaml": tmpl("{deployment: docker, ha: pacemaker}"),
		"tht/puppet/services/pacemaker.yaml":          tmpl("{deployment: puppet}"),
		"tht/puppet/services/keystone.yaml":           tmpl("{deployment: puppet, resource_type: OS::TripleO::Services::Keystone}"),
		"tht/docker/services/keystone.yaml":           tmpl("{deployment: docker, resource_type: [OS::TripleO::Services::Keystone]}"),
		"tht/docker/services/keystone-for-other.yaml": tmpl("{deployment: docker, resource_type: OS::TripleO::Services::Other}"),
		"tht/network/noop.yaml":                       tmpl("{}"),
	}
}

const services = `resource_registry:
  OS::TripleO::Services::RabbitMQ:
    - ../puppet/services/rabbitmq.yaml
    - ../puppet/services/pacemaker/rabbitmq.yaml
    - ../docker/services/rabbitmq.yaml
    - ../docker/services/pacemaker/rabbitmq.yaml
  OS::TripleO::Services::Keystone: [../puppet/services/keystone.yaml, ../docker/services/keystone.yaml, ../docker/services/keystone-for-other.yaml]
  OS::TripleO::Services::Pacemaker: ../puppet/services/pacemaker.yaml
  OS::TripleO::Server: OS::Nova::Server
  OS::TripleO::ControllerServer: OS::TripleO::Server
  OS::TripleO::Network::Ports::*: ../network/noop.yaml
`

func resolve(t *testing.T, fsys fstest.MapFS, envs ...string) (*Registry, hcl.Diagnostics) {
	t.Helper()
	var parsed []*Environment
	var diags hcl.Diagnostics
	for _, name := range envs {
		env, d := ParseEnvironment(name, fsys[name].Data)
		diags = append(diags, d...)
		if env != nil {
			parsed = append(parsed, env)
		}
	}
	reg, d := Resolve(fsys, parsed)
	return reg, append(diags, d...)
}

func diagLines(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		out = append(out, fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary))
	}
	return out
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name, requires string
		want           map[string]string
	}{
		{"docker with pacemaker", "requires: {deployment: docker, ha: pacemaker}\n", map[string]string{
			"OS::TripleO::Services::RabbitMQ": "tht/docker/services/pacemaker/rabbitmq.yaml",
			"OS::TripleO::Services::Keystone": "tht/docker/services/keystone.yaml", // ha: no candidate declares it
		}},
		{"puppet", "requires: {deployment: puppet, ha: none}\n", map[string]string{
			"OS::TripleO::Services::RabbitMQ": "tht/puppet/services/rabbitmq.yaml",
			"OS::TripleO::Services::Keystone": "tht/puppet/services/keystone.yaml",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tht()
			fsys["tht/environments/services.yaml"] = &fstest.MapFile{Data: []byte(services)}
			fsys["tht/environments/choice.yaml"] = &fstest.MapFile{Data: []byte(tc.requires)}
			reg, diags := resolve(t, fsys, "tht/environments/services.yaml", "tht/environments/choice.yaml")
			if len(diags) > 0 {
				t.Fatalf("%q", diagLines(diags))
			}
			for k, want := range tc.want {
				if got := reg.Entries[k].Value; got != want {
					t.Errorf("%s = %s, want %s", k, got, want)
				}
			}
			// A pinned scalar bypasses requires; aliases and globs resolve.
			if got := reg.Entries["OS::TripleO::Services::Pacemaker"].Value; got != "tht/puppet/services/pacemaker.yaml" {
				t.Errorf("the pinned Pacemaker: %s", got)
			}
			if got, ok := reg.Lookup("OS::TripleO::ControllerServer"); !ok || got != "OS::Nova::Server" {
				t.Errorf("alias chain: %s %v", got, ok)
			}
			if got, ok := reg.Lookup("OS::TripleO::Network::Ports::ExternalPort"); !ok || got != "tht/network/noop.yaml" {
				t.Errorf("glob: %s %v", got, ok)
			}
		})
	}
}

// TestResolveErrors: zero and several matches, every key at once, at the entry's
// file and line.
func TestResolveErrors(t *testing.T) {
	fsys := tht()
	fsys["tht/environments/services.yaml"] = &fstest.MapFile{Data: []byte(services)}
	fsys["tht/environments/docker.yaml"] = &fstest.MapFile{Data: []byte("requires: {deployment: docker}\n")}
	fsys["tht/environments/mixed.yaml"] = &fstest.MapFile{Data: []byte("requires: {deployment: docker, ha: none}\nresource_registry:\n" +
		"  OS::TripleO::Services::Mixed: [../puppet/services/rabbitmq.yaml, ../docker/services/pacemaker/rabbitmq.yaml]\n")}
	_, diags := resolve(t, fsys, "tht/environments/services.yaml", "tht/environments/mixed.yaml")
	want := []string{
		`tht/environments/mixed.yaml:3:3: resource_registry "OS::TripleO::Services::Mixed": no candidate matches requires {deployment: docker, ha: none}; candidates: tht/puppet/services/rabbitmq.yaml {deployment: puppet, ha: none}, tht/docker/services/pacemaker/rabbitmq.yaml {deployment: docker, ha: pacemaker}`,
	}
	if diff := cmp.Diff(want, diagLines(diags)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, diags = resolve(t, fsys, "tht/environments/services.yaml", "tht/environments/docker.yaml")
	want = []string{
		`tht/environments/services.yaml:2:3: resource_registry "OS::TripleO::Services::RabbitMQ": 2 candidates match requires {deployment: docker}: tht/docker/services/rabbitmq.yaml, tht/docker/services/pacemaker/rabbitmq.yaml (they differ on: ha)`,
	}
	if diff := cmp.Diff(want, diagLines(diags)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A requires value no candidate declares (a typo) is one error at the requires
// entry that set it, naming who resolves and the keys it leaves unresolved, not
// one error per registry key at the shared environment.
func TestResolveRequiresTypoIsReportedAtRequires(t *testing.T) {
	fsys := tht()
	fsys["tht/environments/services.yaml"] = &fstest.MapFile{Data: []byte(services)}
	for _, tc := range []struct {
		requires, summary string
	}{
		{"requires: {ha: none, deployment: dokcer}\n", `cluster prod: requires deployment: dokcer matches no candidate template; did you mean "docker"?`},
		{"requires: {ha: none, deployment: ansible}\n", `cluster prod: requires deployment: ansible matches no candidate template`},
	} {
		fsys["clusters/prod.yaml"] = &fstest.MapFile{Data: []byte(tc.requires)}
		var envs []*Environment
		for _, name := range []string{"tht/environments/services.yaml", "clusters/prod.yaml"} {
			env, d := ParseEnvironment(name, fsys[name].Data)
			if d.HasErrors() {
				t.Fatal(d)
			}
			envs = append(envs, env)
		}
		_, diags := ResolveFor(fsys, envs, "cluster prod")
		if diff := cmp.Diff([]string{"clusters/prod.yaml:1:34: " + tc.summary}, diagLines(diags)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
			continue
		}
		wantDetail := "The candidates in the resource_registry of tht/environments/services.yaml declare deployment: docker, puppet. " +
			"Unresolved because of it: OS::TripleO::Services::Keystone, OS::TripleO::Services::RabbitMQ."
		if diags[0].Detail != wantDetail {
			t.Errorf("detail:\n got %s\nwant %s", diags[0].Detail, wantDetail)
		}
		if r := diags[0].Subject; string(fsys["clusters/prod.yaml"].Data[r.Start.Byte:r.End.Byte]) != strings.TrimSuffix(strings.Fields(tc.requires)[4], "}") {
			t.Errorf("the subject covers %q", fsys["clusters/prod.yaml"].Data[r.Start.Byte:r.End.Byte])
		}
	}
}

// TestMergeEnvironments: how later environments' entries replace and delete
// earlier ones, per registry key and per resource, and which keys are Heat's
// own and skipped.
func TestMergeEnvironments(t *testing.T) {
	for _, tc := range []struct {
		name string
		envs []string
		// want is every entry of the merged registry, key → value, a
		// per-resource one as resource/key.
		want map[string]string
	}{
		{"a later entry wins", []string{"resource_registry: {OS::A: a.yaml, OS::B: b.yaml}\n", "resource_registry: {OS::A: OS::Heat::None}\n"},
			map[string]string{"OS::A": "OS::Heat::None", "OS::B": "env/b.yaml"}},
		{"a null deletes", []string{"resource_registry: {OS::A: a.yaml, OS::B: b.yaml}\n", "resource_registry: {OS::A: null}\n"},
			map[string]string{"OS::B": "env/b.yaml"}},
		{"a glob null deletes every entry it matches", []string{"resource_registry: {OS::N::A: a.yaml, OS::N::B: b.yaml, OS::M: m.yaml}\n", "resource_registry: {OS::N::*: null}\n"},
			map[string]string{"OS::M": "env/m.yaml"}},
		{"base_url is skipped", []string{"resource_registry: {base_url: /usr/share/tht, OS::A: a.yaml}\n"},
			map[string]string{"OS::A": "env/a.yaml"}},
		{"per resource, hooks and restricted_actions skipped", []string{"resource_registry:\n  resources:\n    r1: {OS::A: a.yaml, hooks: pre-create, restricted_actions: [replace]}\n"},
			map[string]string{"r1/OS::A": "env/a.yaml"}},
		{"a per-resource null deletes", []string{"resource_registry: {resources: {r1: {OS::A: a.yaml, OS::B: b.yaml}}}\n", "resource_registry: {resources: {r1: {OS::A: null}}}\n"},
			map[string]string{"r1/OS::B": "env/b.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			var names []string
			for i, src := range tc.envs {
				name := fmt.Sprintf("env/%d.yaml", i)
				fsys[name] = &fstest.MapFile{Data: []byte(src)}
				names = append(names, name)
			}
			reg, diags := resolve(t, fsys, names...)
			if len(diags) > 0 {
				t.Fatalf("%q", diagLines(diags))
			}
			got := map[string]string{}
			for k, e := range reg.Entries {
				got[k] = e.Value
			}
			for res, entries := range reg.Resources {
				for k, e := range entries {
					got[res+"/"+k] = e.Value
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestBadEnvironments: each bad input with its message, file and line.
func TestBadEnvironments(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		want      string
	}{
		{"unknown section", "resource_registy: {}\n", `e.yaml:1:1: environment has wrong section "resource_registy"; did you mean "resource_registry"?`},
		{"empty section", "resource_registry:\n", `e.yaml:1:1: environment has empty section "resource_registry"`},
		{"not a mapping", "- a\n", `e.yaml:1:1: an environment is a mapping of sections`},
		{"registry not a mapping", "resource_registry: [a]\n", `e.yaml:1:20: resource_registry is a mapping`},
		{"type name in a list", "resource_registry:\n  OS::X: [a.yaml, OS::Heat::None]\n", `e.yaml:2:19: resource_registry "OS::X": list entries must be template paths, got "OS::Heat::None"`},
		{"number in a list", "resource_registry:\n  OS::X: [a.yaml, 3]\n", `e.yaml:2:19: resource_registry "OS::X": list entries must be template paths, got a number`},
		{"empty list", "resource_registry:\n  OS::X: []\n", `e.yaml:2:10: resource_registry "OS::X": an empty list of candidates`},
		{"mapping value", "resource_registry:\n  OS::X: {a: b}\n", `e.yaml:2:10: resource_registry "OS::X": a value is a template path, a type, a list of template paths or null, not a mapping`},
		{"leaves the repository", "resource_registry:\n  OS::X: ../../x.yaml\n", `e.yaml:2:10: "../../x.yaml" leaves the repository`},
		{"absolute path", "resource_registry:\n  OS::X: /etc/x.yaml\n", `e.yaml:2:10: "/etc/x.yaml": template paths are relative to the environment's directory`},
		{"URL", "resource_registry:\n  OS::X: [https://example.org/x.yaml]\n", `e.yaml:2:11: "https://example.org/x.yaml": template paths are relative to the environment's directory`},
		{"requires value", "requires: {deployment: [a, b]}\n", `e.yaml:1:12: requires: "deployment" must be a capability key (^[a-z][a-z0-9_]*$) with a string value`},
		{"requires key", "requires: {Deployment: a}\n", `e.yaml:1:12: requires: "Deployment" must be a capability key (^[a-z][a-z0-9_]*$) with a string value`},
		{"requires not a mapping", "requires: docker\n", `e.yaml:1:11: requires maps capability keys to values`},
		{"resources not a mapping", "resource_registry:\n  resources: [x]\n", `e.yaml:2:14: resource_registry resources maps resource names to registries`},
		{"missing candidate", "resource_registry:\n  OS::X: [tht/none.yaml, tht/network/noop.yaml]\n", `e.yaml:2:3: resource_registry "OS::X": candidate "tht/none.yaml" not found`},
		{"alias cycle", "resource_registry:\n  OS::A: OS::B\n  OS::B: OS::C\n  OS::C: OS::A\n", `e.yaml:2:3: resource_registry: alias cycle OS::A -> OS::B -> OS::C -> OS::A`},
		{"candidate with bad capabilities", "resource_registry:\n  OS::X: [bad.yaml]\n", `bad.yaml:2:38: capabilities must map keys to a string or list of strings; deployment is a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tht()
			fsys["e.yaml"] = &fstest.MapFile{Data: []byte(tc.env)}
			fsys["bad.yaml"] = tmpl("{ha: none, deployment: 7}")
			_, diags := resolve(t, fsys, "e.yaml")
			lines := diagLines(diags)
			if len(lines) == 0 || lines[0] != tc.want {
				t.Errorf("got %q\nwant %q", lines, tc.want)
			}
		})
	}
}

func FuzzParseEnvironment(f *testing.F) {
	f.Add([]byte(services))
	f.Add([]byte("requires: {a: b}\nresource_registry:\n  resources:\n    r: {OS::X: x.yaml}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		env, diags := ParseEnvironment("tht/environments/e.yaml", src)
		if env == nil || diags.HasErrors() {
			return
		}
		for _, e := range env.Registry {
			for _, c := range e.Candidates {
				if strings.HasPrefix(c, "../") || strings.HasPrefix(c, "/") {
					t.Fatalf("candidate %q leaves the repository", c)
				}
			}
		}
		_, _ = Resolve(fstest.MapFS{}, []*Environment{env})
	})
}
