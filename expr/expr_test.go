package expr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// upstreamModels are the models of nailgun's and fuel-ui's expression tests: a
// cluster in ha_compact mode, its settings and its release.
func upstreamModels() Models {
	return Models{
		"cluster": map[string]any{"mode": "ha_compact", "mode_insecure": true},
		"settings": map[string]any{
			"common": map[string]any{"libvirt_type": map[string]any{"value": "kvm"}},
		},
		"release": map[string]any{"roles": []any{"controller", "compute"}},
	}
}

// row is one expression and what it evaluates to: a value, or an error kind.
type row struct {
	src     string
	want    any
	err     ErrorKind // 0: no error expected
	lenient bool      // evaluate with strict=false
}

// upstreamRows is nailgun's table (nailgun/test/unit/test_expression_parser.py),
// every row in order, evaluated strictly as there. ParseError is Syntax, the
// TypeError of a nonexistent key is Undefined.
var upstreamRows = []row{
	// scalars
	{src: `true`, want: true},
	{src: `false`, want: false},
	{src: `123`, want: int64(123)},
	{src: `"123"`, want: "123"},
	{src: `'123'`, want: "123"},
	// null
	{src: `null`, want: nil},
	{src: `null == false`, want: false},
	{src: `null == true`, want: false},
	{src: `null == null`, want: true},
	// boolean operators
	{src: `true or false`, want: true},
	{src: `true and false`, want: false},
	{src: `not true`, want: false},
	// precedence
	{src: `true or true and false or false`, want: true},
	{src: `true == true and false == false`, want: true},
	// comparison
	{src: `123 == 123`, want: true},
	{src: `123 == 321`, want: false},
	{src: `123 != 321`, want: true},
	{src: `123 != "123"`, want: true},
	// grouping
	{src: `(true or true) and not (false or false)`, want: true},
	// errors
	{src: `(true`, err: Syntax},
	{src: `false and`, err: Syntax},
	{src: `== 123`, err: Syntax},
	{src: `#^@$*()#@!`, err: Syntax},
	// model paths
	{src: `cluster:mode`, want: "ha_compact"},
	{src: `cluster:mode == "ha_compact"`, want: true},
	{src: `cluster:mode != "multinode"`, want: true},
	{src: `"controller" in release:roles`, want: true},
	{src: `"unknown-role" in release:roles`, want: false},
	{src: `settings:common.libvirt_type.value`, want: "kvm"},
	{src: `settings:common.libvirt_type.value == "kvm"`, want: true},
	{src: `cluster:mode == "ha_compact" and not (settings:common.libvirt_type.value != "kvm")`, want: true},
	// nonexistent keys
	{src: `cluster:nonexistentkey`, err: Undefined},
	// evaluation flow
	{src: `cluster:mode != "ha_compact" and cluster:nonexistentkey == 1`, want: false},
	{src: `cluster:mode == "ha_compact" and cluster:nonexistentkey == 1`, err: Undefined},
}

// fuelUIRows is fuel-ui's mirror of the table (static/tests/unit/expression.js),
// every row in order; a third element false there means strict=false. The JS
// Error rows map to the kind nailgun raises.
var fuelUIRows = []row{
	{src: `true`, want: true},
	{src: `false`, want: false},
	{src: `123`, want: int64(123)},
	{src: `"123"`, want: "123"},
	{src: `'123'`, want: "123"},
	{src: `null`, want: nil},
	{src: `null == false`, want: false},
	{src: `null == true`, want: false},
	{src: `null == null`, want: true},
	{src: `true or false`, want: true},
	{src: `true and false`, want: false},
	{src: `not true`, want: false},
	{src: `true or true and false or false`, want: true},
	{src: `true == true and false == false`, want: true},
	{src: `123 == 123`, want: true},
	{src: `123 == 321`, want: false},
	{src: `123 != 321`, want: true},
	{src: `123 != "123"`, want: true},
	{src: `(true or true) and not (false or false)`, want: true},
	{src: `(true`, err: Syntax},
	{src: `false and`, err: Syntax},
	{src: `== 123`, err: Syntax},
	{src: `#^@$*()#@!`, err: Syntax},
	{src: `cluster:mode`, want: "ha_compact"},
	{src: `cluster:mode == "ha_compact"`, want: true},
	{src: `cluster:mode != "multinode"`, want: true},
	{src: `cluster:mode_insecure == true`, want: true},
	{src: `"controller" in release:roles`, want: true},
	{src: `"unknown-role" in release:roles`, want: false},
	{src: `settings:common.libvirt_type.value`, want: "kvm"},
	{src: `settings:common.libvirt_type.value == "kvm"`, want: true},
	{src: `cluster:mode == "ha_compact" and not (settings:common.libvirt_type.value != "kvm")`, want: true},
	{src: `cluster:nonexistentkey`, err: Undefined},
	{src: `cluster:nonexistentkey == null`, want: true, lenient: true},
	{src: `cluster:mode != "ha_compact" and cluster:nonexistentkey == null`, want: false},
	{src: `cluster:mode == "ha_compact" and cluster:nonexistentkey == null`, err: Undefined},
	{src: `cluster:mode == "ha_compact" and cluster:nonexistentkey == null`, want: true, lenient: true},
}

func runRows(t *testing.T, rows []row, m Models) {
	t.Helper()
	for i, r := range rows {
		t.Run(fmt.Sprintf("%02d %s", i, r.src), func(t *testing.T) {
			got, err := Eval(r.src, m, !r.lenient)
			checkResult(t, r, got, err)
		})
	}
}

func checkResult(t *testing.T, r row, got any, err error) {
	t.Helper()
	if r.err != 0 {
		var ee *Error
		if !errors.As(err, &ee) {
			t.Fatalf("Eval(%q) = %#v, %v; want a %v *Error", r.src, got, err, r.err)
		}
		if diff := cmp.Diff(r.err, ee.Kind); diff != "" {
			t.Errorf("Eval(%q) error %q: kind (-want +got):\n%s", r.src, ee, diff)
		}
		return
	}
	if err != nil {
		t.Fatalf("Eval(%q): %v", r.src, err)
	}
	if diff := cmp.Diff(r.want, got); diff != "" {
		t.Errorf("Eval(%q) (-want +got):\n%s", r.src, diff)
	}
}

func TestUpstreamNailgun(t *testing.T) { runRows(t, upstreamRows, upstreamModels()) }

func TestUpstreamFuelUI(t *testing.T) { runRows(t, fuelUIRows, upstreamModels()) }

// testModels are richer models for the package's own tests.
func testModels() Models {
	return Models{
		"cluster": map[string]any{"mode": "ha_compact", "net_provider": "neutron", "count": 3},
		"settings": map[string]any{
			"common":  map[string]any{"libvirt_type": map[string]any{"value": "kvm"}, "debug": map[string]any{"value": false}},
			"storage": map[string]any{"volumes_ceph": map[string]any{"value": true}},
			"list":    []any{"a", int64(1)},
			"str":     "text",
			"nothing": nil,
			"empty":   map[string]any{},
		},
		"version":               map[string]any{"feature_groups": []any{"experimental", "advanced"}},
		"networking_parameters": map[string]any{"segmentation_type": "vlan"},
		"release":               map[string]any{"roles": []string{"controller", "compute"}, "meta": map[string]string{"a": "b"}},
		"node_attributes":       nil,
	}
}

func TestEval(t *testing.T) {
	rows := []row{
		// and/or return operands, Python style
		{src: `1 and 'x'`, want: "x"},
		{src: `0 and 'x'`, want: int64(0)},
		{src: `0 or ''`, want: ""},
		{src: `'' or null or 5`, want: int64(5)},
		{src: `null and cluster:nope`, want: nil},
		{src: `cluster:mode or cluster:nope`, want: "ha_compact"},
		// short-circuit: the right side is never read
		{src: `false and cluster:missing == null`, want: false},
		{src: `true or nosuchmodel:x`, want: true},
		{src: `false and 1 in 2`, want: false},
		{src: `true and cluster:missing == null`, err: Undefined},
		{src: `true and cluster:missing == null`, want: true, lenient: true},
		// in: list, mapping, string
		{src: `'experimental' in version:feature_groups`, want: true},
		{src: `'mirantis' in version:feature_groups`, want: false},
		{src: `not ('experimental' in version:feature_groups)`, want: false},
		{src: `1 in settings:list`, want: true},
		{src: `true in settings:list`, want: true}, // Python: True == 1
		{src: `'1' in settings:list`, want: false},
		{src: `'compute' in release:roles`, want: true},
		{src: `'common' in settings`, err: Syntax}, // a model alone is not a path
		{src: `'common' in settings:common`, want: false},
		{src: `'libvirt_type' in settings:common`, want: true},
		{src: `1 in settings:common`, want: false},
		{src: `'a' in release:meta`, want: true},
		{src: `settings:list in settings:common`, err: Type}, // unhashable
		{src: `'ha' in cluster:mode`, want: true},
		{src: `'' in cluster:mode`, want: true},
		{src: `'x' in cluster:mode`, want: false},
		{src: `1 in cluster:mode`, err: Type},
		{src: `1 in 2`, err: Type},
		{src: `'a' in null`, err: Type},
		{src: `'a' in cluster:missing`, err: Type, lenient: true},
		{src: `'a' in true`, err: Type},
		// precedence
		{src: `not 1 == 2`, want: false},     // (not 1) == 2
		{src: `not 0 == 1`, want: true},      // (not 0) == 1, True == 1
		{src: `not 'a' in 'abc'`, err: Type}, // (not 'a') in 'abc'
		{src: `not ('a' in 'abc')`, want: false},
		{src: `1 == 1 == true`, want: true}, // (1 == 1) == true
		{src: `2 == 2 == 2`, want: false},   // (2 == 2) == 2, not chained
		{src: `true or false and false`, want: true},
		{src: `(true or false) and false`, want: false},
		{src: `'a' in 'ab' == true`, want: true},
		{src: `1 == 1 and 2 != 2 or 3 == 3`, want: true},
		{src: `not not 5`, want: true},
		{src: `1 == not 0`, want: true},
		{src: `'b' in 'abc' in 'TrueFalse'`, err: Type}, // (True) in 'TrueFalse'
		// equality, Python style
		{src: `true == 1`, want: true},
		{src: `false == 0`, want: true},
		{src: `null == 0`, want: false},
		{src: `'1' == 1`, want: false},
		{src: `cluster:count == 3`, want: true},
		{src: `-3 == -3`, want: true},
		{src: `007 == 7`, want: true},
		{src: `version:feature_groups == version:feature_groups`, want: true},
		{src: `settings:common == settings:common`, want: true},
		{src: `settings:common == settings:storage`, want: false},
		{src: `release:roles == settings:list`, want: false},
		{src: `settings:empty == settings:empty`, want: true},
		// values
		{src: `cluster:count`, want: int64(3)},
		{src: `version:feature_groups`, want: []any{"experimental", "advanced"}},
		{src: `settings:nothing`, want: nil},
		{src: `settings:storage.volumes_ceph.value and 'ceph'`, want: "ceph"},
		{src: `networking_parameters:segmentation_type == 'vlan'`, want: true},
		{src: `'it''s'`, err: Syntax},
		{src: `"it's"`, want: "it's"},
		{src: `'say "hi"'`, want: `say "hi"`},
		{src: "\t(true)\r\n", want: true},
		// model paths: errors and laziness
		{src: `nosuchmodel:x`, err: UnknownModel},
		{src: `nosuchmodel:x`, err: UnknownModel, lenient: true},
		{src: `:x`, err: UnknownModel},
		{src: `cluster:mode.x`, err: Type},
		{src: `cluster:mode.x`, err: Type, lenient: true},
		{src: `settings:list.0`, err: Type},
		{src: `settings:nothing.value`, err: Type, lenient: true},
		{src: `node_attributes:x`, err: Type},
		{src: `settings:common.missing.value`, err: Undefined},
		{src: `settings:common.missing.value`, want: nil, lenient: true},
		{src: `settings:common.missing.value? == null`, want: true},
		{src: `settings:common.libvirt_type.value?`, want: "kvm"},
		{src: `nosuchmodel:x?`, err: UnknownModel},
		// lexing as nailgun's lexer does
		{src: `nottrue`, want: false},
		{src: `trueandfalse`, want: false},
		{src: `1and2`, want: int64(2)},
		{src: `notnull`, want: true},
		{src: `notes:a`, err: UnknownModel},
		{src: `null_x:y`, err: Syntax},
		{src: `1-1`, err: Syntax},
		{src: `- 1`, err: Syntax},
		{src: `!true`, err: Syntax},
		{src: `true && false`, err: Syntax},
		{src: `'abc`, err: Syntax},
		{src: "'a\nb'", err: Syntax},
		{src: `99999999999999999999`, err: Syntax},
		{src: `-9223372036854775808`, want: int64(-9223372036854775808)},
		{src: ``, err: Syntax},
		{src: `   `, err: Syntax},
		{src: `()`, err: Syntax},
		{src: `true false`, err: Syntax},
		{src: `a:b:c`, err: Syntax},
		{src: `cluster:`, err: Syntax},
		{src: `é`, err: Syntax},
	}
	runRows(t, rows, testModels())
}

func TestErrorColumns(t *testing.T) {
	tests := []struct {
		src    string
		strict bool
		want   Error
	}{
		{src: `(true`, want: Error{Offset: 5, Column: 6, Kind: Syntax, Msg: "syntax error: missing ')' to close the '(' at column 1"}},
		{src: `false and`, want: Error{Offset: 9, Column: 10, Kind: Syntax, Msg: "syntax error: unexpected end of expression"}},
		{src: `== 123`, want: Error{Offset: 0, Column: 1, Kind: Syntax, Msg: "syntax error: unexpected '=='"}},
		{src: `true and )`, want: Error{Offset: 9, Column: 10, Kind: Syntax, Msg: "syntax error: unexpected ')'"}},
		{src: `#^@$*()#@!`, want: Error{Offset: 0, Column: 1, Kind: Syntax, Msg: `syntax error: illegal character '#'`}},
		{src: `'é' == é`, want: Error{Offset: 8, Column: 8, Kind: Syntax, Msg: `syntax error: illegal character 'é'`}},
		{src: "true or \xff", want: Error{Offset: 8, Column: 9, Kind: Syntax, Msg: `syntax error: illegal byte 0xff`}},
		{src: `1 == 'abc`, want: Error{Offset: 5, Column: 6, Kind: Syntax, Msg: `syntax error: unterminated string starting with '`}},
		{src: `(1 2)`, want: Error{Offset: 3, Column: 4, Kind: Syntax, Msg: `syntax error: unexpected '2'`}},
		{src: `1 == 99999999999999999999`, want: Error{Offset: 5, Column: 6, Kind: Syntax, Msg: `syntax error: integer 99999999999999999999 is out of range`}},
		{
			src:    `cluster:mode == "x" or foo:bar.baz`,
			strict: true,
			want:   Error{Offset: 23, Column: 24, Kind: UnknownModel, Msg: `unknown model "foo"`},
		},
		{
			src:    `'é' != cluster:mode and settings:common.nope.value`,
			strict: true,
			want:   Error{Offset: 25, Column: 25, Kind: Undefined, Msg: `value of settings:common.nope.value is undefined: settings:common has no key "nope"`},
		},
		{
			src:    `cluster:nope`,
			strict: true,
			want:   Error{Offset: 0, Column: 1, Kind: Undefined, Msg: `value of cluster:nope is undefined: model "cluster" has no key "nope"`},
		},
		{
			src:  `true and settings:list.x`,
			want: Error{Offset: 9, Column: 10, Kind: Type, Msg: `cannot read settings:list.x: settings:list is a list, not a mapping`},
		},
		{
			src:  `node_attributes:a.b`,
			want: Error{Offset: 0, Column: 1, Kind: Type, Msg: `cannot read node_attributes:a.b: model node_attributes is null, not a mapping`},
		},
		{
			src:  `'a' in  cluster:count`,
			want: Error{Offset: 4, Column: 5, Kind: Type, Msg: `'in' needs a list, a mapping or a string on the right, not int`},
		},
		{
			src:  `(3) in 'abc'`,
			want: Error{Offset: 4, Column: 5, Kind: Type, Msg: `'in' a string needs a string on the left, not int`},
		},
		{
			src:  `version:feature_groups in settings:common`,
			want: Error{Offset: 23, Column: 24, Kind: Type, Msg: `'in' cannot look for a list among the keys of a mapping`},
		},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%02d %s", i, tt.src), func(t *testing.T) {
			_, err := Eval(tt.src, testModels(), tt.strict)
			var ee *Error
			if !errors.As(err, &ee) {
				t.Fatalf("Eval(%q) error = %v, want an *Error", tt.src, err)
			}
			if diff := cmp.Diff(tt.want, *ee); diff != "" {
				t.Errorf("Eval(%q) error (-want +got):\n%s", tt.src, diff)
			}
			if diff := cmp.Diff(fmt.Sprintf("column %d: %s", tt.want.Column, tt.want.Msg), err.Error()); diff != "" {
				t.Errorf("Error() (-want +got):\n%s", diff)
			}
		})
	}
}

// In non-strict mode a missing key is null where strict mode fails, at the same
// expression.
func TestStrictness(t *testing.T) {
	src := `cluster:mode == 'ha_compact' and settings:common.nope.value == null`
	e, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Eval(testModels(), true); err == nil || err.(*Error).Kind != Undefined || err.(*Error).Column != 34 {
		t.Errorf("strict: error = %v, want undefined at column 34", err)
	}
	got, err := e.Eval(testModels(), false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(any(true), got); diff != "" {
		t.Errorf("non-strict (-want +got):\n%s", diff)
	}
}

func TestParseString(t *testing.T) {
	src := ` not ('experimental' in version:feature_groups) `
	e, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(src, e.String()); diff != "" {
		t.Errorf("String() (-want +got):\n%s", diff)
	}
	var nilExpr *Expr
	if _, err := nilExpr.Eval(nil, true); err == nil {
		t.Error("Eval on a nil *Expr: no error")
	}
	if _, err := (&Expr{}).Eval(nil, true); err == nil {
		t.Error("Eval on a zero Expr: no error")
	}
	if _, err := Parse(`(`); err == nil {
		t.Error(`Parse("("): no error`)
	} else if _, ok := err.(*Error); !ok {
		t.Errorf("Parse error is %T, want *Error", err)
	}
}

func TestModelPaths(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{src: `true`, want: nil},
		{src: `settings:a.b`, want: []string{"settings:a.b"}},
		{
			src:  `settings:storage.volumes_lvm.value == true and not ('experimental' in version:feature_groups) or cluster:mode != 'x' or settings:a.b? == null or settings:a.b`,
			want: []string{"settings:storage.volumes_lvm.value", "version:feature_groups", "cluster:mode", "settings:a.b", "settings:a.b"},
		},
		{src: `:x-y.z`, want: []string{":x-y.z"}},
		{src: `notes:a`, want: []string{"notes:a"}},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%02d %s", i, tt.src), func(t *testing.T) {
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ModelPaths(e)); diff != "" {
				t.Errorf("ModelPaths (-want +got):\n%s", diff)
			}
		})
	}
	if got := ModelPaths(nil); got != nil {
		t.Errorf("ModelPaths(nil) = %v", got)
	}
}

type named string

func TestTruthy(t *testing.T) {
	one := 1
	var nilPtr *int
	tests := []struct {
		v    any
		want bool
	}{
		{nil, false},
		{false, false},
		{true, true},
		{0, false},
		{int64(0), false},
		{int32(-1), true},
		{uint8(0), false},
		{uint64(1 << 63), true},
		{0.0, false},
		{float32(0.5), true},
		{"", false},
		{"0", true},
		{named(""), false},
		{[]any{}, false},
		{[]any{nil}, true},
		{[]string(nil), false},
		{[]int{0}, true},
		{[0]int{}, false},
		{map[string]any{}, false},
		{map[string]any{"a": nil}, true},
		{map[any]any{1: 2}, true},
		{nilPtr, false},
		{&one, true},
		{struct{}{}, true},
	}
	for i, tt := range tests {
		if got := Truthy(tt.v); got != tt.want {
			t.Errorf("%d: Truthy(%#v) = %v, want %v", i, tt.v, got, tt.want)
		}
	}
}

// Model data of other Go types reads like the plain kinds.
func TestOtherGoTypes(t *testing.T) {
	one := int32(1)
	m := Models{
		"m": map[string]any{
			"i32":   int32(7),
			"u":     uint(7),
			"f":     7.0,
			"f32":   float32(7.5),
			"ptr":   &one,
			"named": named("x"),
			"ints":  []int{1, 2},
			"arr":   [2]string{"a", "b"},
			"anymap": map[any]any{
				"k": map[any]any{"v": "deep"},
				1:   "one",
			},
			"typed": map[named]int{"t": 1},
		},
	}
	rows := []row{
		{src: `m:i32 == 7`, want: true},
		{src: `m:i32`, want: int64(7)},
		{src: `m:u == 7`, want: true},
		{src: `m:f == 7`, want: true},
		{src: `m:f`, want: 7.0},
		{src: `m:f32 == 7`, want: false},
		{src: `m:ptr`, want: int64(1)},
		{src: `m:ptr == true`, want: true},
		{src: `m:named == 'x'`, want: true},
		{src: `m:named`, want: "x"},
		{src: `2 in m:ints`, want: true},
		{src: `'b' in m:arr`, want: true},
		{src: `m:anymap.k.v`, want: "deep"},
		{src: `1 in m:anymap`, want: true},
		{src: `true in m:anymap`, want: true},
		{src: `'k' in m:anymap`, want: true},
		{src: `'t' in m:typed`, want: true},
		{src: `m:typed.t`, want: int64(1)},
		{src: `m:typed.x`, err: Undefined},
		{src: `m:anymap == m:anymap`, want: true},
		{src: `m:ints == m:ints`, want: true},
		{src: `m:arr == m:ints`, want: false},
	}
	runRows(t, rows, m)
}

func TestNesting(t *testing.T) {
	ok := []string{
		strings.Repeat("(", maxNesting) + "true" + strings.Repeat(")", maxNesting),
		strings.Repeat("not ", maxNesting) + "true",
		"true" + strings.Repeat(" and true", 5*maxNesting),
		"true" + strings.Repeat(" == true", maxNesting),
	}
	for i, src := range ok {
		if _, err := Eval(src, nil, true); err != nil {
			t.Errorf("%d: %v", i, err)
		}
	}
	tooDeep := []string{
		strings.Repeat("(", maxNesting+1) + "true" + strings.Repeat(")", maxNesting+1),
		strings.Repeat("(", 100*maxNesting),
		strings.Repeat("not ", maxNesting+1) + "true",
		"true" + strings.Repeat(" == true", maxNesting+1),
		strings.Repeat("not (", maxNesting) + "true" + strings.Repeat(")", maxNesting),
	}
	for i, src := range tooDeep {
		_, err := Parse(src)
		var ee *Error
		if !errors.As(err, &ee) || ee.Kind != Syntax || !strings.Contains(ee.Msg, "nested too deeply") {
			t.Errorf("%d: error = %v, want nested too deeply", i, err)
		}
	}
}

// Cyclic model data makes a comparison fail, not overflow the stack.
func TestCyclicData(t *testing.T) {
	a := []any{nil}
	a[0] = a
	b := []any{nil}
	b[0] = b
	_, err := Eval(`m:a == m:b`, Models{"m": map[string]any{"a": a, "b": b}}, true)
	var ee *Error
	if !errors.As(err, &ee) || ee.Kind != Type || ee.Offset != 4 {
		t.Errorf("error = %v, want a Type error at offset 4", err)
	}
}

func BenchmarkParse(b *testing.B) {
	src := `settings:common.libvirt_type.value == 'kvm' and not ('experimental' in version:feature_groups) or cluster:mode != "ha_compact"`
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEval(b *testing.B) {
	e, err := Parse(`settings:common.libvirt_type.value == 'kvm' and not ('experimental' in version:feature_groups) or cluster:mode != "ha_compact"`)
	if err != nil {
		b.Fatal(err)
	}
	m := testModels()
	for b.Loop() {
		if _, err := e.Eval(m, true); err != nil {
			b.Fatal(err)
		}
	}
}
