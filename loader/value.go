package loader

import (
	"strconv"

	"github.com/hashicorp/hcl/v2"
)

// Kind is the type of a Value.
type Kind uint8

// The kinds of Value. A YAML, JSON or HCL document decodes into a tree of these.
const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindList
	KindMap
)

var kindNames = [...]string{"null", "bool", "integer", "float", "string", "list", "mapping"}

// String returns the kind's name as used in diagnostics ("mapping", "list", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one node of a positioned data tree. Every document fuelsync reads — YAML,
// JSON or HCL — decodes into Values, so that merging, `_path` loading and validation
// work the same way on all of them and every value still knows the file, line and
// column it was written at.
//
// Values are immutable once decoded: an alias in a YAML file is the same *Value as its
// anchor, merges build new Values instead of changing their inputs, and a Cache hands
// the same trees to several loads (and so to several goroutines).
type Value struct {
	Kind Kind
	// Range is where the value is written (for a scalar, the scalar token).
	Range hcl.Range
	// Text is the scalar exactly as written (a string's content, "1.0" for a float
	// written that way), so a version written as a YAML float keeps its spelling.
	Text  string
	Bool  bool
	Int   int64
	Float float64
	// Items holds the elements of a list.
	Items []*Value
	// Fields holds the entries of a mapping in document order, keys unique.
	Fields []Field
	// Overridden holds the earlier fields of keys written twice in a mapping (the
	// later one wins and is in Fields); kept so callers can make a repeat an error.
	Overridden []Field
	// Tag is a YAML tag that changes meaning, currently only "!!pairs" (a list of
	// [key, value] lists in the order written).
	Tag string
}

// Field is one key of a mapping.
type Field struct {
	Key      string
	KeyRange hcl.Range
	Value    *Value
}

// IsNull reports whether v is absent or null.
func (v *Value) IsNull() bool { return v == nil || v.Kind == KindNull }

// IsMap reports whether v is a mapping.
func (v *Value) IsMap() bool { return v != nil && v.Kind == KindMap }

// IsList reports whether v is a list.
func (v *Value) IsList() bool { return v != nil && v.Kind == KindList }

// IsScalar reports whether v is a bool, number or string.
func (v *Value) IsScalar() bool {
	return v != nil && v.Kind >= KindBool && v.Kind <= KindString
}

// Field returns the field named key of a mapping, or nil.
func (v *Value) Field(key string) *Field {
	if v == nil || v.Kind != KindMap {
		return nil
	}
	for i := range v.Fields {
		if v.Fields[i].Key == key {
			return &v.Fields[i]
		}
	}
	return nil
}

// Get returns the value of key in a mapping, or nil when v is not a mapping or has no
// such key.
func (v *Value) Get(key string) *Value {
	if f := v.Field(key); f != nil {
		return f.Value
	}
	return nil
}

// Has reports whether the mapping v has key (even with a null value).
func (v *Value) Has(key string) bool { return v.Field(key) != nil }

// Str returns the value as a string when it is a scalar (numbers and booleans as
// written); ok is false for null, lists and mappings.
func (v *Value) Str() (s string, ok bool) {
	if !v.IsScalar() {
		return "", false
	}
	return v.Text, true
}

// String returns the scalar text, or "" for anything else.
func (v *Value) String() string {
	s, _ := v.Str()
	return s
}

// Strings returns the elements of a list of scalars, or a single scalar as a
// one-element list. ok is false when any element is not a scalar.
func (v *Value) Strings() (out []string, ok bool) {
	switch {
	case v.IsNull():
		return nil, true
	case v.IsScalar():
		return []string{v.Text}, true
	case v.Kind == KindList:
		out = make([]string, 0, len(v.Items))
		for _, it := range v.Items {
			s, ok := it.Str()
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// Keys returns the keys of a mapping in document order.
func (v *Value) Keys() []string {
	if v == nil || v.Kind != KindMap {
		return nil
	}
	keys := make([]string, len(v.Fields))
	for i, f := range v.Fields {
		keys[i] = f.Key
	}
	return keys
}

// Interface converts the tree to plain Go values: nil, bool, int64, float64, string,
// []any and map[string]any. A `!!pairs` list is a []any of two-element []any.
func (v *Value) Interface() any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case KindBool:
		return v.Bool
	case KindInt:
		return v.Int
	case KindFloat:
		return v.Float
	case KindString:
		return v.Text
	case KindList:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			out[i] = it.Interface()
		}
		return out
	case KindMap:
		out := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			out[f.Key] = f.Value.Interface()
		}
		return out
	}
	return nil
}

// NewString returns a string Value at r.
func NewString(s string, r hcl.Range) *Value {
	return &Value{Kind: KindString, Text: s, Range: r}
}

// NewMap returns an empty mapping Value at r.
func NewMap(r hcl.Range) *Value { return &Value{Kind: KindMap, Range: r} }

// With returns a copy of the mapping v with key set to val (replaced in place when
// present, appended otherwise). v itself is not changed.
func (v *Value) With(key string, keyRange hcl.Range, val *Value) *Value {
	out := *v
	out.Fields = make([]Field, 0, len(v.Fields)+1)
	found := false
	for _, f := range v.Fields {
		if f.Key == key {
			f = Field{Key: key, KeyRange: keyRange, Value: val}
			found = true
		}
		out.Fields = append(out.Fields, f)
	}
	if !found {
		out.Fields = append(out.Fields, Field{Key: key, KeyRange: keyRange, Value: val})
	}
	return &out
}

// Without returns a copy of the mapping v without key.
func (v *Value) Without(key string) *Value {
	if !v.Has(key) {
		return v
	}
	out := *v
	out.Fields = make([]Field, 0, len(v.Fields))
	for _, f := range v.Fields {
		if f.Key != key {
			out.Fields = append(out.Fields, f)
		}
	}
	return &out
}

// DeepMerge returns base overridden by over: mappings merge key by key (recursively),
// anything else in over replaces what base has (lists are replaced wholesale, as
// nailgun's dict_merge does). Neither input is changed; unchanged subtrees are shared.
func DeepMerge(base, over *Value) *Value {
	if base == nil || base.Kind != KindMap || over == nil || over.Kind != KindMap {
		if over == nil {
			return base
		}
		return over
	}
	out := *over
	out.Fields = make([]Field, 0, len(base.Fields)+len(over.Fields))
	for _, bf := range base.Fields {
		if of := over.Field(bf.Key); of != nil {
			out.Fields = append(out.Fields, Field{Key: bf.Key, KeyRange: of.KeyRange, Value: DeepMerge(bf.Value, of.Value)})
			continue
		}
		out.Fields = append(out.Fields, bf)
	}
	for _, of := range over.Fields {
		if !base.Has(of.Key) {
			out.Fields = append(out.Fields, of)
		}
	}
	return &out
}
