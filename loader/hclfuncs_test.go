package loader

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// HCL functions whose results dwarf their arguments are refused with a
// diagnostic at the call instead of allocating gigabytes.
func TestHCLFunctionResultsAreBounded(t *testing.T) {
	tests := map[string]string{
		"setproduct":         `setproduct(range(1000), range(1000), range(10))`,
		"format width":       `format("%500000000s", "x")`,
		"format precision":   `format("%.400000000f", 1)`,
		"formatlist":         `formatlist("%100000s", range(1000))`,
		"indent":             `indent(100000000, "a\nb")`,
		"replace empty":      `replace(format("%10000s", ""), "", format("%10000s", ""))`,
		"regex_replace":      `regex_replace(format("%10000s", ""), "", format("%10000s", ""))`,
		"doubling by concat": `concat(local.l, local.l)`,
		"doubling by join":   `join(local.s, [local.s, local.s])`,
		"chain of locals":    `local.c4`,
	}
	// local.l and local.s are just within the bound of one call, one more doubling
	// passes it; local.c4 is a chain of calls each within it, past the file's.
	locals := `locals {
  l = flatten([for i in range(200) : range(100)])
  s = format("%8000000s", "")
  c1 = concat(local.l, [])
  c2 = concat(local.c1, [])
  c3 = concat(local.c2, [])
  c4 = concat(local.c3, [])
}
`
	for name, expr := range tests {
		t.Run(name, func(t *testing.T) {
			src := "locals {\n}\n\n\n\n\n\n\n"
			if strings.Contains(expr, "local.") {
				src = locals
			}
			if name != "chain of locals" { // the chain would spend the file's budget first
				for _, c := range []string{"c1", "c2", "c3", "c4"} {
					src = regexp.MustCompile(`(?m)^  `+c+` = .*$`).ReplaceAllString(src, "")
				}
			}
			src += "cluster \"c\" {\n  release = \"r-1.0\"\n  settings = { x = " + expr + " }\n}\n"
			fsys := fstest.MapFS{"clusters/c.hcl": {Data: []byte(src)}}
			var diags []string
			alloc := allocated(func() {
				_, ds := Load(fsys, Options{})
				for _, d := range ds {
					diags = append(diags, d.Subject.String()+": "+d.Summary+": "+d.Detail)
				}
			})
			line, want := "11,", "function results are limited to 16 MiB"
			if name == "chain of locals" {
				line, want = "7,", "the function results of this file add up to more than 64 MiB"
			}
			found := false
			for _, d := range diags {
				if strings.Contains(d, "clusters/c.hcl:"+line) && strings.Contains(d, want) {
					found = true
				}
			}
			if !found {
				t.Errorf("want a diagnostic at line %s %q, got:\n%s", line, want, strings.Join(diags, "\n"))
			}
			if alloc > 256<<20 {
				t.Errorf("loading allocated %d MiB", alloc>>20)
			}
		})
	}
}

// Ordinary uses stay within the bound.
func TestHCLFunctionsWithinTheBound(t *testing.T) {
	src := `cluster "c" {
  release = "r-1.0"
  settings = {
    a = format("%-10s|%05d|%.2f", "x", 42, 3.14159)
    b = length(setproduct(range(50), range(50)))
    c = formatlist("node-%d", range(3))
    d = indent(2, "a\nb")
    e = replace("a.b.c", ".", "-")
  }
}
`
	fsys := fstest.MapFS{"clusters/c.hcl": {Data: []byte(src)}}
	repo, diags := Load(fsys, Options{})
	for _, d := range diags {
		if strings.Contains(d.Error(), "too large") {
			t.Errorf("unexpected: %v", d)
		}
	}
	s := repo.Clusters[0].Settings
	got := []string{s.Get("a").String(), s.Get("b").String(), s.Get("d").String(), s.Get("e").String()}
	want := []string{"x         |00042|3.14", "2500", "a\n  b", "a-b-c"}
	if strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Nested for expressions multiply; their iterations in one file are bounded, so
// three loops over 100 values are a diagnostic, not 10^6 values.
func TestHCLForExpressionsAreBounded(t *testing.T) {
	// k is a literal: no function call is involved.
	src := `locals {
  small = [for a in local.h : [for b in local.h : a * b]]
  h     = [` + strings.Repeat("1, ", 100) + `]
  k     = [` + strings.Repeat("1, ", 100) + `]
}
cluster "c" {
  release  = "r-1.0"
  settings = { x = [for a in local.k : [for b in local.k : [for c in local.k : c]]] }
}
`
	fsys := fstest.MapFS{"clusters/c.hcl": {Data: []byte(src)}}
	var diags []string
	alloc := allocated(func() {
		_, ds := Load(fsys, Options{})
		for _, d := range ds {
			diags = append(diags, d.Subject.String()+": "+d.Summary)
		}
	})
	found := false
	for _, d := range diags {
		if strings.HasPrefix(d, "clusters/c.hcl:8,") && strings.Contains(d, "the for expressions of this file iterate more than 200000 times") {
			found = true
		}
		if strings.HasPrefix(d, "clusters/c.hcl:2,") {
			t.Errorf("the small loops are refused: %s", d)
		}
	}
	if !found {
		t.Errorf("want a diagnostic at line 8, got:\n%s", strings.Join(diags, "\n"))
	}
	if alloc > 256<<20 {
		t.Errorf("loading allocated %d MiB", alloc>>20)
	}
}
