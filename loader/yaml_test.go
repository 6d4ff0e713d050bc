package loader

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	yaml "go.yaml.in/yaml/v3"
)

func TestDecodeYAML(t *testing.T) {
	tests := map[string]struct {
		src      string
		want     any
		warnings []string
	}{
		"empty file":     {src: "", want: nil},
		"only comments":  {src: "# nothing\n", want: nil},
		"empty list":     {src: "[]", want: []any{}},
		"scalars":        {src: "a: 1\nb: 1.5\nc: true\nd: null\ne: '1'\nf: 2.1.0\ng: yes\n", want: map[string]any{"a": int64(1), "b": 1.5, "c": true, "d": nil, "e": "1", "f": "2.1.0", "g": "yes"}},
		"duplicate keys": {src: "a: 1\nb: 2\na: 3\n", want: map[string]any{"a": int64(3), "b": int64(2)}, warnings: []string{`duplicate key "a" (first at line 1): the last one wins`}},
		"anchors and aliases": {
			src:  "base: &b {x: 1, y: [1, 2]}\ncopy: *b\n",
			want: map[string]any{"base": map[string]any{"x": int64(1), "y": []any{int64(1), int64(2)}}, "copy": map[string]any{"x": int64(1), "y": []any{int64(1), int64(2)}}},
		},
		"merge keys": {
			src:  "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",
			want: map[string]any{"base": map[string]any{"x": int64(1), "y": int64(2)}, "derived": map[string]any{"x": int64(1), "y": int64(3)}},
		},
		"pairs": {
			src:  "bind: !!pairs\n  - \"cluster:net_provider\": neutron\n  - \"settings:a.b\": true\n",
			want: map[string]any{"bind": []any{[]any{"cluster:net_provider", "neutron"}, []any{"settings:a.b", true}}},
		},
		"several documents": {src: "a: 1\n---\nb: 2\n", want: map[string]any{"a": int64(1)}, warnings: []string{"the file holds several YAML documents; only the first is read"}},
		"json":              {src: `{"a": [1, "x", {"b": null}]}`, want: map[string]any{"a": []any{int64(1), "x", map[string]any{"b": nil}}}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			v, diags := DecodeYAML("f.yaml", []byte(tt.src))
			checkDecoded(t, v, diags, tt.want, tt.warnings)
		})
	}
}

// checkDecoded compares a decoded tree (as plain Go values) and the summaries of
// its diagnostics, which must all be warnings.
func checkDecoded(t *testing.T, v *Value, diags hcl.Diagnostics, want any, warnings []string) {
	t.Helper()
	if diags.HasErrors() {
		t.Fatalf("unexpected errors: %v", diags)
	}
	if diff := cmp.Diff(want, v.Interface()); diff != "" {
		t.Errorf("value mismatch (-want +got):\n%s", diff)
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.Summary)
	}
	if diff := cmp.Diff(warnings, got); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
}

func TestDecodeYAMLPositions(t *testing.T) {
	src := "# comment\nname: détaché\nlist:\n  - \"quoted\"\n  - {k: v}\n"
	v, diags := DecodeYAML("p.yaml", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	pos := func(r hcl.Range) string {
		return fmt.Sprintf("%d:%d-%d:%d@%d-%d", r.Start.Line, r.Start.Column, r.End.Line, r.End.Column, r.Start.Byte, r.End.Byte)
	}
	got := map[string]string{
		"name key":   pos(v.Field("name").KeyRange),
		"name value": pos(v.Get("name").Range),
		"quoted":     pos(v.Get("list").Items[0].Range),
		"k value":    pos(v.Get("list").Items[1].Get("k").Range),
	}
	want := map[string]string{
		"name key":   "2:1-2:5@10-14",
		"name value": "2:7-2:14@16-25", // é is two bytes: 7 characters, 9 bytes
		"quoted":     "4:5-4:13@36-44",
		"k value":    "5:9-5:10@53-54",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("positions mismatch (-want +got):\n%s", diff)
	}
	if s := src[v.Get("name").Range.Start.Byte:v.Get("name").Range.End.Byte]; s != "détaché" {
		t.Errorf("byte range covers %q", s)
	}
}

func TestDecodeYAMLErrors(t *testing.T) {
	laughs := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i, prev := 'b', 'a'; i <= 'j'; i, prev = i+1, i {
		laughs += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	tests := map[string]struct {
		src, summary string
		line         int
	}{
		"unclosed flow":   {"a: 1\nb: [1, 2\nc: 3\n", "YAML syntax error: did not find expected ',' or ']'", 2},
		"tab indentation": {"a:\n\tb: c\n", "YAML syntax error: tabs are not allowed for indentation", 2},
		"billion laughs":  {laughs, "YAML aliases expand to", 1},
		"recursive alias": {"x: &a [1, *a]\n", "YAML alias *a refers to its own anchor", 1},
		"complex key":     {"? [a, b]\n: c\n", "mapping keys must be scalars, not a list", 1},
		"bad pairs":       {"p: !!pairs\n  - {a: 1, b: 2}\n", "each item of a !!pairs list must be a mapping with one key", 2},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, diags := DecodeYAML("bad.yaml", []byte(tt.src))
			if !diags.HasErrors() {
				t.Fatalf("no error")
			}
			d := diags[0]
			if !strings.HasPrefix(d.Summary, tt.summary) || d.Subject == nil || d.Subject.Start.Line != tt.line || d.Subject.Filename != "bad.yaml" {
				t.Errorf("got %q at %v, want %q at line %d", d.Summary, d.Subject, tt.summary, tt.line)
			}
		})
	}
}

func TestFlowScalar(t *testing.T) {
	for in, want := range map[string]string{
		"acme": "acme", "Acme Plugin": "Acme Plugin", "a b": "a b",
		"true": "'true'", "Yes": "'Yes'", "1.0": "'1.0'", "12": "'12'", "null": "'null'", "~": "'~'",
		"it's": "it's", "'q": "'''q'", "x:": "'x:'", "a: b": "'a: b'", "a, b": "'a, b'", "[x]": "'[x]'", "#c": "'#c'", "": "''",
	} {
		got := FlowScalar(in)
		if got != want {
			t.Errorf("FlowScalar(%q) = %s, want %s", in, got, want)
		}
		var back []string
		if err := yaml.Unmarshal([]byte("["+got+"]"), &back); err != nil || len(back) != 1 || back[0] != in {
			t.Errorf("FlowScalar(%q) = %s reads back as %q in a list (%v)", in, got, back, err)
		}
		var m map[string]string
		if err := yaml.Unmarshal([]byte("k: "+got+"\n"), &m); err != nil || m["k"] != in {
			t.Errorf("FlowScalar(%q) = %s reads back as %q as a value (%v)", in, got, m["k"], err)
		}
	}
}

// yaml.v3 reports many syntax errors at the line where the enclosing mapping or
// list starts; the diagnostic points at the line that is wrong, and says why when
// it is a tab or an indentation that does not fit.
func TestYAMLSyntaxErrorPointsAtTheWrongLine(t *testing.T) {
	tests := map[string]struct {
		src            string
		line, column   int
		summary        string
		detailContains string
	}{
		"over-indented sibling key": {
			src:  "cluster: demo\nnodes:\n  node-1: {id: 1}\n  node-2: {id: 2}\n   node-3: {id: 3}\n",
			line: 5, column: 4,
			summary:        "YAML syntax error: did not find expected key (check the indentation)",
			detailContains: "This line is indented by 3 spaces, line 4 by 2 spaces.",
		},
		"over-indented key under a scalar": {
			src:  "nodes:\n  node-1:\n    id: 1\n      roles: [a]\n",
			line: 4, column: 7,
			summary:        "YAML syntax error: mapping values are not allowed in this context (check the indentation)",
			detailContains: "indented by 6 spaces, line 3 by 4 spaces",
		},
		"misaligned list item": {
			src:  "tasks:\n- id: a\n  type: shell\n - id: b\n",
			line: 4, column: 2,
			summary:        "YAML syntax error: did not find expected key (check the indentation)",
			detailContains: "indented by 1 space, line 3 by 2 spaces",
		},
		"tab after a nested key": {
			src:  "nodes:\n  node-1:\n    id: 1\n\troles: [a]\n",
			line: 4, column: 1,
			summary:        "YAML syntax error: tabs are not allowed for indentation",
			detailContains: "YAML indents with spaces only",
		},
		"unclosed quote": {
			src:  "settings:\n  a: \"x\n  b: 1\n",
			line: 2, column: 6,
			summary:        "YAML syntax error: found unexpected end of stream",
			detailContains: "a quoted string without its closing quote",
		},
		"tab after spaces": {
			src:  "a:\n  b: 1\n  \tc: 2\n",
			line: 3, column: 3,
			summary:        "YAML syntax error: tabs are not allowed for indentation",
			detailContains: "Replace the tab with spaces",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, diags := DecodeYAML("bad.yaml", []byte(tt.src))
			if len(diags) != 1 {
				t.Fatalf("got %d diagnostics, want 1: %v", len(diags), diags)
			}
			d := diags[0]
			if d.Summary != tt.summary || d.Subject == nil || d.Subject.Start.Line != tt.line || d.Subject.Start.Column != tt.column {
				t.Errorf("got %q at %v, want %q at line %d column %d", d.Summary, d.Subject, tt.summary, tt.line, tt.column)
			}
			if !strings.Contains(d.Detail, tt.detailContains) {
				t.Errorf("detail %q does not contain %q", d.Detail, tt.detailContains)
			}
		})
	}
}
