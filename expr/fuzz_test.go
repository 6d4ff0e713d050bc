package expr

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: any source parses and evaluates, in both modes, without a panic; every
// error is an *Error whose offset lies inside the source.
func FuzzParse(f *testing.F) {
	for _, rows := range [][]row{upstreamRows, fuelUIRows} {
		for _, r := range rows {
			f.Add(r.src)
		}
	}
	for _, s := range []string{
		`'experimental' in version:feature_groups`,
		`settings:common.missing.value? == null or settings:list.0`,
		`not not (1 and 'x') == true in settings:common`,
		`nottrueandnull_x:y`,
		"'é' == \xff",
	} {
		f.Add(s)
	}
	m := testModels()
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		checkError(t, src, err)
		if err != nil {
			if e != nil {
				t.Fatalf("Parse(%q) returned an Expr and an error", src)
			}
			return
		}
		if e.String() != src {
			t.Fatalf("String() = %q, want %q", e.String(), src)
		}
		for _, p := range ModelPaths(e) {
			if !strings.Contains(src, p) || !strings.Contains(p, ":") {
				t.Fatalf("ModelPaths(%q) has %q", src, p)
			}
		}
		for _, strict := range []bool{true, false} {
			_, err := e.Eval(m, strict)
			checkError(t, src, err)
		}
	})
}

func checkError(t *testing.T, src string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ee *Error
	if !errors.As(err, &ee) {
		t.Fatalf("%q: error %T %v is not an *Error", src, err, err)
	}
	if ee.Offset < 0 || ee.Offset > len(src) || ee.Column < 1 || ee.Column > ee.Offset+1 {
		t.Fatalf("%q: error %q at offset %d, column %d", src, ee, ee.Offset, ee.Column)
	}
	if ee.Kind < Syntax || ee.Kind > Type || ee.Msg == "" {
		t.Fatalf("%q: error %q has kind %v", src, ee, ee.Kind)
	}
}
