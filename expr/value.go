package expr

import (
	"fmt"
	"math"
	"reflect"
)

// kind is the Python type a Go value stands for.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt
	kFloat
	kString
	kList
	kMap
	kOther // anything else: truthy, equal only to a deeply equal value
)

// maxDerefs bounds how many pointers classify follows (a pointer may point to
// itself).
const maxDerefs = 64

// classify returns the kind of v and v normalised: integers become int64, floats
// float64, named string and bool types their base type, pointers what they point
// to (nil when nil). Lists and mappings are returned as they are.
func classify(v any) (kind, any) {
	switch x := v.(type) {
	case nil:
		return kNull, nil
	case bool:
		return kBool, x
	case int64:
		return kInt, x
	case int:
		return kInt, int64(x)
	case float64:
		return kFloat, x
	case string:
		return kString, x
	case []any:
		return kList, x
	case map[string]any:
		return kMap, x
	case []string:
		return kList, x
	case map[string]string:
		return kMap, x
	}
	return classifyReflect(v)
}

func classifyReflect(v any) (kind, any) {
	rv := reflect.ValueOf(v)
	for range maxDerefs {
		switch rv.Kind() {
		case reflect.Bool:
			return kBool, rv.Bool()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return kInt, rv.Int()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			u := rv.Uint()
			if u > math.MaxInt64 {
				return kFloat, float64(u) // beyond int64: approximated
			}
			return kInt, int64(u)
		case reflect.Float32, reflect.Float64:
			return kFloat, rv.Float()
		case reflect.String:
			return kString, rv.String()
		case reflect.Slice, reflect.Array:
			return kList, v
		case reflect.Map:
			return kMap, v
		case reflect.Pointer, reflect.Interface:
			if rv.IsNil() {
				return kNull, nil
			}
			rv = rv.Elem()
			if !rv.CanInterface() {
				return kOther, v
			}
			v = rv.Interface()
			continue
		case reflect.Invalid:
			return kNull, nil
		}
		return kOther, v
	}
	return kOther, v
}

// typeName is the name used for v's kind in messages.
func typeName(k kind, v any) string {
	switch k {
	case kNull:
		return "null"
	case kBool:
		return "bool"
	case kInt:
		return "int"
	case kFloat:
		return "float"
	case kString:
		return "string"
	case kList:
		return "list"
	case kMap:
		return "mapping"
	}
	return fmt.Sprintf("%T", v)
}

// Truthy reports whether Python considers v true: nil, false, zero numbers and
// empty strings, lists and mappings are false; everything else is true.
func Truthy(v any) bool {
	k, x := classify(v)
	return truthy(k, x)
}

func truthy(k kind, x any) bool {
	switch k {
	case kNull:
		return false
	case kBool:
		return x.(bool)
	case kInt:
		return x.(int64) != 0
	case kFloat:
		return x.(float64) != 0 // NaN is true, as in Python
	case kString:
		return x.(string) != ""
	case kList:
		return listLen(x) > 0
	case kMap:
		return mapLen(x) > 0
	}
	return true
}

func listLen(v any) int {
	switch x := v.(type) {
	case []any:
		return len(x)
	case []string:
		return len(x)
	}
	return reflect.ValueOf(v).Len()
}

// listEach calls fn for each element of the list v until fn returns false.
func listEach(v any, fn func(e any) bool) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if !fn(e) {
				return
			}
		}
		return
	case []string:
		for _, e := range x {
			if !fn(e) {
				return
			}
		}
		return
	}
	rv := reflect.ValueOf(v)
	for i := range rv.Len() {
		e := rv.Index(i)
		if !e.CanInterface() {
			return
		}
		if !fn(e.Interface()) {
			return
		}
	}
}

func mapLen(v any) int {
	switch x := v.(type) {
	case map[string]any:
		return len(x)
	case map[string]string:
		return len(x)
	}
	return reflect.ValueOf(v).Len()
}

// mapEach calls fn for each entry of the mapping v until fn returns false.
func mapEach(v any, fn func(k, e any) bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !fn(k, e) {
				return
			}
		}
		return
	case map[string]string:
		for k, e := range x {
			if !fn(k, e) {
				return
			}
		}
		return
	}
	it := reflect.ValueOf(v).MapRange()
	for it.Next() {
		k, e := it.Key(), it.Value()
		if !k.CanInterface() || !e.CanInterface() {
			return
		}
		if !fn(k.Interface(), e.Interface()) {
			return
		}
	}
}

// mapGet looks the string key up in the mapping v.
func mapGet(v any, key string) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		e, ok := x[key]
		return e, ok
	case map[string]string:
		e, ok := x[key]
		return e, ok
	}
	rv := reflect.ValueOf(v)
	kt := rv.Type().Key()
	if kt.Kind() == reflect.String {
		e := rv.MapIndex(reflect.ValueOf(key).Convert(kt))
		if !e.IsValid() || !e.CanInterface() {
			return nil, false
		}
		return e.Interface(), true
	}
	// Keys of another type (map[any]any): compare each key as Python would.
	var found any
	ok := false
	mapEach(v, func(k, e any) bool {
		if kk, ks := classify(k); kk == kString && ks.(string) == key {
			found, ok = e, true
			return false
		}
		return true
	})
	return found, ok
}

// mapHas reports whether the mapping v has a key equal to x (a hashable value:
// not a list or a mapping).
func mapHas(v any, xk kind, x any) bool {
	if xk == kString {
		_, ok := mapGet(v, x.(string))
		return ok
	}
	switch v.(type) {
	case map[string]any, map[string]string:
		return false
	}
	if reflect.TypeOf(v).Key().Kind() == reflect.String {
		return false
	}
	found := false
	mapEach(v, func(k, _ any) bool {
		eq, err := equal(k, x, 0)
		found = err == nil && eq
		return !found
	})
	return found
}

// maxValueDepth bounds the nesting equal compares, against cyclic data.
const maxValueDepth = 10000

type tooDeepError struct{}

func (tooDeepError) Error() string {
	return fmt.Sprintf("values nested deeper than %d levels cannot be compared", maxValueDepth)
}

// equal is Python's ==: numbers (bool counting as 0 and 1) compare by value,
// strings by content, lists element by element, mappings entry by entry; values of
// different types are not equal.
func equal(a, b any, depth int) (bool, error) {
	if depth > maxValueDepth {
		return false, tooDeepError{}
	}
	ka, a := classify(a)
	kb, b := classify(b)
	switch {
	case ka == kNull || kb == kNull:
		return ka == kb, nil
	case isNumber(ka) && isNumber(kb):
		return numEqual(ka, a, kb, b), nil
	case ka == kString && kb == kString:
		return a.(string) == b.(string), nil
	case ka == kList && kb == kList:
		return listEqual(a, b, depth)
	case ka == kMap && kb == kMap:
		return mapEqual(a, b, depth)
	case ka == kOther && kb == kOther:
		return reflect.DeepEqual(a, b), nil
	}
	return false, nil
}

func isNumber(k kind) bool { return k == kBool || k == kInt || k == kFloat }

func asInt(k kind, v any) int64 {
	if k == kBool {
		if v.(bool) {
			return 1
		}
		return 0
	}
	return v.(int64)
}

func numEqual(ka kind, a any, kb kind, b any) bool {
	switch {
	case ka != kFloat && kb != kFloat:
		return asInt(ka, a) == asInt(kb, b)
	case ka == kFloat && kb == kFloat:
		return a.(float64) == b.(float64)
	case ka == kFloat:
		return floatIntEqual(a.(float64), asInt(kb, b))
	default:
		return floatIntEqual(b.(float64), asInt(ka, a))
	}
}

// floatIntEqual compares exactly, as Python does (not by converting i to float).
func floatIntEqual(f float64, i int64) bool {
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return false // also NaN and the infinities
	}
	return int64(f) == i
}

func listEqual(a, b any, depth int) (bool, error) {
	if listLen(a) != listLen(b) {
		return false, nil
	}
	if x, ok := a.([]any); ok {
		if y, ok := b.([]any); ok {
			for i := range x {
				eq, err := equal(x[i], y[i], depth+1)
				if err != nil || !eq {
					return false, err
				}
			}
			return true, nil
		}
	}
	var as, bs []any
	listEach(a, func(e any) bool { as = append(as, e); return true })
	listEach(b, func(e any) bool { bs = append(bs, e); return true })
	if len(as) != len(bs) {
		return false, nil
	}
	for i := range as {
		eq, err := equal(as[i], bs[i], depth+1)
		if err != nil || !eq {
			return false, err
		}
	}
	return true, nil
}

func mapEqual(a, b any, depth int) (bool, error) {
	if mapLen(a) != mapLen(b) {
		return false, nil
	}
	result, failed := true, error(nil)
	mapEach(a, func(k, ea any) bool {
		kk, kx := classify(k)
		var eb any
		found := false
		if kk == kString {
			eb, found = mapGet(b, kx.(string))
		} else {
			mapEach(b, func(k2, e2 any) bool {
				if eq, err := equal(k, k2, depth+1); err == nil && eq {
					eb, found = e2, true
					return false
				}
				return true
			})
		}
		if !found {
			result = false
			return false
		}
		eq, err := equal(ea, eb, depth+1)
		if err != nil || !eq {
			result, failed = false, err
			return false
		}
		return true
	})
	return result, failed
}
