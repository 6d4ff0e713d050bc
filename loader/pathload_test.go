package loader

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestPathLoader(t *testing.T) {
	tree := fstest.MapFS{
		"p/roles.yaml":              {Data: []byte("controller: {name: C}\n")},
		"p/graphs/a.yaml":           {Data: []byte("- {id: a}\n")},
		"p/graphs/b.yaml":           {Data: []byte("- {id: b}\n- {id: c}\n")},
		"p/graphs/empty.yaml":       {Data: []byte("")},
		"p/graphs/notes.txt":        {Data: []byte("ignored")},
		"p/deep/x/1.yaml":           {Data: []byte("- 1\n")},
		"p/deep/x/y/2.yml":          {Data: []byte("- 2\n")},
		"p/deep/3.json":             {Data: []byte("[3]")},
		"p/maps/1.yaml":             {Data: []byte("a: 1\nb: 1\n")},
		"p/maps/2.yaml":             {Data: []byte("b: 2\nc: 2\n")},
		"p/nested/outer.yaml":       {Data: []byte("inner_path: inner.yaml\n")},
		"p/nested/inner.yaml":       {Data: []byte("deepest_path: ../roles.yaml\n")},
		"p/scripts/.keep":           {Data: nil},
		"p/fixture.yaml":            {Data: []byte("- fields: {state_path: /var/lib/nova, url_path: 'https://x/y'}\n")},
		"p/dir-with-yaml/some.yaml": {Data: []byte("x: 1\n")},
	}
	tests := map[string]struct {
		meta     string
		want     any
		warnings []string
	}{
		"file":               {meta: "roles_path: roles.yaml\n", want: map[string]any{"roles": map[string]any{"controller": map[string]any{"name": "C"}}}},
		"directory kept":     {meta: "scripts_path: scripts\n", want: map[string]any{"scripts_path": "scripts"}},
		"kept keys":          {meta: "deployment_scripts_path: missing/\nrepository_path: repos/ubuntu\n", want: map[string]any{"deployment_scripts_path": "missing/", "repository_path": "repos/ubuntu"}},
		"glob of lists":      {meta: "tasks_path: graphs/*.yaml\n", want: map[string]any{"tasks": []any{map[string]any{"id": "a"}, map[string]any{"id": "b"}, map[string]any{"id": "c"}}}},
		"double star sorted": {meta: "x_path: 'deep/**/*'\n", want: map[string]any{"x": []any{int64(3), int64(1), int64(2)}}},
		"glob of mappings": {
			meta:     "m_path: maps/*.yaml\n",
			want:     map[string]any{"m": map[string]any{"a": int64(1), "b": int64(2), "c": int64(2)}},
			warnings: []string{`m_path: key "b" of p/maps/2.yaml overrides the one in p/maps/1.yaml`},
		},
		"nested _path":     {meta: "o_path: nested/outer.yaml\n", want: map[string]any{"o": map[string]any{"inner": map[string]any{"deepest": map[string]any{"controller": map[string]any{"name": "C"}}}}}},
		"inside lists":     {meta: "releases:\n  - roles_path: roles.yaml\n", want: map[string]any{"releases": []any{map[string]any{"roles": map[string]any{"controller": map[string]any{"name": "C"}}}}}},
		"nested externals": {meta: "f_path: fixture.yaml\n", want: map[string]any{"f": []any{map[string]any{"fields": map[string]any{"state_path": "/var/lib/nova", "url_path": "https://x/y"}}}}},
		"non-string":       {meta: "n_path: 3\n", want: map[string]any{"n_path": int64(3)}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{"p/metadata.yaml": {Data: []byte(tt.meta)}}
			for k, v := range tree {
				fsys[k] = v
			}
			v, diags := newPathLoader(newRepoFS(fsys, 0)).expandFile("p/metadata.yaml", fileRange("p/metadata.yaml"), nil)
			checkDecoded(t, v, diags, tt.want, tt.warnings)
		})
	}
}

func TestPathLoaderErrors(t *testing.T) {
	tree := fstest.MapFS{
		"p/list.yaml":       {Data: []byte("- 1\n")},
		"p/mixed/1.yaml":    {Data: []byte("- 1\n")},
		"p/mixed/2.yaml":    {Data: []byte("a: 1\n")},
		"p/cycle/a.yaml":    {Data: []byte("b_path: b.yaml\n")},
		"p/cycle/b.yaml":    {Data: []byte("a_path: a.yaml\n")},
		"p/readme.md":       {Data: []byte("# no")},
		"outside.yaml":      {Data: []byte("x: 1\n")},
		"p/scalar/one.yaml": {Data: []byte("just a string\n")},
		"p/scalar/two.yaml": {Data: []byte("- 1\n")},
	}
	tests := map[string]struct {
		meta, file, summary string
		line, col           int
	}{
		"missing file":   {"x_path: nope.yaml\n", "p/metadata.yaml", "x_path: file p/nope.yaml does not exist", 1, 9},
		"no glob match":  {"x_path: 'none/*.yaml'\n", "p/metadata.yaml", "x_path: no .yaml, .yml or .json file matches p/none/*.yaml", 1, 9},
		"mixed roots":    {"x_path: 'mixed/*.yaml'\n", "p/metadata.yaml", "x_path: the matched files mix lists and mappings: p/mixed/1.yaml is a list, p/mixed/2.yaml is a mapping", 1, 9},
		"cycle":          {"c_path: cycle/a.yaml\n", "p/cycle/b.yaml", "_path cycle: p/cycle/a.yaml -> p/cycle/b.yaml -> p/cycle/a.yaml", 1, 9},
		"escape":         {"x_path: ../../outside.yaml\n", "p/metadata.yaml", `path "../../outside.yaml" leaves the repository`, 1, 9},
		"absolute":       {"x_path: /etc/passwd\n", "p/metadata.yaml", `path "/etc/passwd" is absolute; paths must be relative to the file that contains them`, 1, 9},
		"url":            {"x_path: https://example.com/x.yaml\n", "p/metadata.yaml", `path "https://example.com/x.yaml" is a URL; only files inside the repository can be referenced`, 1, 9},
		"not data":       {"x_path: readme.md\n", "p/metadata.yaml", "x_path: p/readme.md is not a .yaml, .yml or .json file", 1, 9},
		"both spellings": {"x: 1\nx_path: list.yaml\n", "p/metadata.yaml", "both x and x_path are set; keep one", 2, 1},
		"scalar root":    {"x_path: 'scalar/*.yaml'\n", "p/scalar/one.yaml", "x_path: the document must be a list or a mapping, not a string", 1, 1},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{"p/metadata.yaml": {Data: []byte(tt.meta)}}
			for k, v := range tree {
				fsys[k] = v
			}
			_, diags := newPathLoader(newRepoFS(fsys, 0)).expandFile("p/metadata.yaml", fileRange("p/metadata.yaml"), nil)
			for _, d := range diags {
				if d.Summary == tt.summary && d.Subject.Filename == tt.file && d.Subject.Start.Line == tt.line && d.Subject.Start.Column == tt.col {
					return
				}
			}
			var got []string
			for _, d := range diags {
				got = append(got, d.Subject.String()+": "+d.Summary)
			}
			t.Errorf("want %s:%d:%d: %s\ngot:\n%s", tt.file, tt.line, tt.col, tt.summary, strings.Join(got, "\n"))
		})
	}
}
