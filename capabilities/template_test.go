package capabilities

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTemplate(t *testing.T) {
	src := "heat_template_version: pike\ncapabilities:\n  deployment: docker\n  ha: [none, pacemaker]\n  resource_type: [OS::A::B, OS::A::C]\n"
	tmpl, ok, diags := ParseTemplate("t.yaml", []byte(src))
	if !ok || len(diags) > 0 {
		t.Fatalf("ok %v: %v", ok, diags)
	}
	if diff := cmp.Diff([]string{"deployment", "ha", "resource_type"}, tmpl.Keys); diff != "" {
		t.Error(diff)
	}
	if !tmpl.Matches([]Cond{{"ha", "pacemaker"}, {"deployment", "docker"}, {"resource_type", "OS::A::C"}}) || tmpl.Matches([]Cond{{"ha", "x"}}) {
		t.Error("matching")
	}
	if !tmpl.Matches([]Cond{{Key: "ha"}}) || tmpl.Matches([]Cond{{Key: "zone"}}) {
		t.Error("bare keys")
	}
	if _, ok, _ := ParseTemplate("env.yaml", []byte("resource_registry: {}\n")); ok {
		t.Error("an environment taken for a template")
	}
	want := map[string][]string{"deployment": {"docker"}, "ha": {"none", "pacemaker"}, "OS::A::B": {"t.yaml"}, "OS::A::C": {"t.yaml"}}
	if diff := cmp.Diff(want, Summary([]*Template{tmpl})); diff != "" {
		t.Error(diff)
	}
}

// TestCorpusTemplates: every template of the TripleO sample kept in the
// tripleo-capabilities example (upstream's, sixteen with capabilities added; see its
// SOURCES.md) parses as a template without a problem.
func TestCorpusTemplates(t *testing.T) {
	root := "../examples/tripleo-capabilities/tht"
	if _, err := os.Stat(root); err != nil {
		t.Fatal("the TripleO sample is missing:", err)
	}
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || strings.Contains(p, ".j2.") {
			return err
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		_, ok, diags := ParseTemplate(p, src)
		if diags.HasErrors() {
			t.Errorf("%s: %v", p, diags)
		}
		if ok {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 30 {
		t.Errorf("only %d templates in the sample", n)
	}
	t.Logf("%d templates", n)
}

func FuzzParseTemplate(f *testing.F) {
	f.Add([]byte("heat_template_version: pike\ncapabilities: {a: b, resource_type: [OS::X::Y]}\n"))
	f.Add([]byte("heat_template_version: 1\ncapabilities: [1]\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		tmpl, ok, diags := ParseTemplate("f.yaml", src)
		if ok && !diags.HasErrors() {
			for _, k := range tmpl.Keys {
				if len(tmpl.Values[k]) == 0 {
					t.Fatalf("key %s without values", k)
				}
			}
		}
	})
}
