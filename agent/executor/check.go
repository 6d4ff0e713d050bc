package executor

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The bounds of a task's checks.
const (
	maxID          = 256      // a task id, in bytes
	maxType        = 64       // a task type
	maxPath        = 4096     // a path
	maxCmd         = 64 << 10 // a shell task's cmd
	maxData        = 1 << 20  // an upload_file task's data
	maxFiles       = 1000     // a copy_files task's files
	maxModules     = 64 << 10 // a puppet task's puppet_modules
	maxDepth       = 32       // nesting of the parameters
	maxValues      = 100_000  // values in the parameters
	maxStringBytes = 4 << 20  // bytes of strings in the parameters
	maxRetries     = 100
	maxSeconds     = 30 * 24 * 3600 // a timeout or an interval: 30 days
	maxProblems    = 20             // problems a CheckError lists
)

// CheckError is what Check (and Run, as its message) reports for a task
// whose id, type or parameters are wrong: every problem found, each naming
// the field ("parameters.timeout: want a number of seconds, not \"abc\"").
type CheckError struct {
	Problems []string
}

func (e *CheckError) Error() string { return strings.Join(e.Problems, "; ") }

// problems collects a task's problems, up to maxProblems.
type problems struct {
	list []string
	more int
}

func (ps *problems) add(format string, args ...any) {
	if len(ps.list) == maxProblems {
		ps.more++
		return
	}
	ps.list = append(ps.list, fmt.Sprintf(format, args...))
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	list := ps.list
	if ps.more > 0 {
		list = append(slices.Clone(list), fmt.Sprintf("and %d more problems", ps.more))
	}
	return &CheckError{Problems: list}
}

// checkTask checks t's id and type and walks its parameters for what every
// type refuses: NUL bytes, values of unknown Go types, excess depth or size.
func checkTask(t Task, ps *problems) {
	switch {
	case t.ID == "":
		ps.add("id: empty")
	case len(t.ID) > maxID:
		ps.add("id: %d bytes, over the bound of %d", len(t.ID), maxID)
	case !utf8.ValidString(t.ID) || strings.IndexFunc(t.ID, unicode.IsControl) >= 0:
		ps.add("id %s: not valid UTF-8 or has a control character", describe(t.ID))
	}
	if !validTypeName(t.Type) {
		ps.add("type %s: want letters, digits, '_', '-' or '.', at most %d bytes", describe(t.Type), maxType)
	}
	w := walker{ps: ps}
	for _, k := range sortedKeys(t.Parameters) {
		w.walk("parameters."+k, k, t.Parameters[k], 1)
	}
}

// validTypeName reports whether s can be a task type: 1 to maxType bytes of
// ASCII letters, digits, '_', '-' and '.'.
func validTypeName(s string) bool {
	if s == "" || len(s) > maxType {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// walker walks parameter values, counting them against the bounds.
type walker struct {
	ps      *problems
	values  int
	strings int
	over    bool // a size bound was reported
}

func (w *walker) walk(path, key string, v any, depth int) {
	w.values++
	w.strings += len(key)
	if hasNUL(key) {
		w.ps.add("%s: a NUL byte in the key", path)
	}
	if !w.over && (w.values > maxValues || w.strings > maxStringBytes) {
		w.over = true
		w.ps.add("parameters: over %d values or %d bytes of strings", maxValues, maxStringBytes)
	}
	if w.over {
		return
	}
	if depth > maxDepth {
		w.ps.add("%s: nested deeper than %d", path, maxDepth)
		w.over = true
		return
	}
	switch v := v.(type) {
	case string:
		w.strings += len(v)
		if hasNUL(v) {
			w.ps.add("%s: a NUL byte", path)
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			w.walk(path+"."+k, k, v[k], depth+1)
		}
	case []any:
		for i, x := range v {
			w.walk(fmt.Sprintf("%s[%d]", path, i), "", x, depth+1)
		}
	case nil, bool:
	default:
		if _, ok := number(v); !ok {
			w.ps.add("%s: a value of type %T, not a string, number, boolean, list or map", path, v)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func hasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// number is v as a number, when it is one: a float, a json.Number or an
// integer of any Go type. A json.Number that does not parse, NaN and the
// infinities are not numbers.
func number(v any) (float64, bool) {
	var f float64
	if n, ok := v.(json.Number); ok {
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return 0, false
		}
		f = x
	} else {
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Float32, reflect.Float64:
			f = rv.Float()
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f = float64(rv.Int())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			f = float64(rv.Uint())
		default:
			return 0, false
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// describe names a wrong value in a problem: a string quoted (its first 40
// bytes), a number or boolean as written, a map, a list or null.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			cut := 40
			for cut > 0 && !utf8.RuneStart(v[cut]) {
				cut--
			}
			return strconv.Quote(v[:cut]) + "…"
		}
		return strconv.Quote(v)
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return fmt.Sprintf("a value of type %T", v)
}

// params reads one map of parameters, reporting what is wrong in ps with
// its path (prefix + key).
type params struct {
	m      map[string]any
	prefix string
	ps     *problems
	// root is Config.Root: every absolute path is taken under it.
	root string
}

// get is the value of key; a nil value is absent.
func (p params) get(key string) (any, bool) {
	v, ok := p.m[key]
	return v, ok && v != nil
}

// str is the string at key, at most max bytes; ok is false when it is
// absent (a problem when required) or wrong (a problem).
func (p params) str(key string, required bool, max int) (s string, ok bool) {
	v, given := p.get(key)
	if !given {
		if required {
			p.ps.add("%s%s: required", p.prefix, key)
		}
		return "", false
	}
	s, isStr := v.(string)
	switch {
	case !isStr:
		p.ps.add("%s%s: want a string, not %s", p.prefix, key, describe(v))
	case len(s) > max:
		p.ps.add("%s%s: %d bytes, over the bound of %d", p.prefix, key, len(s), max)
	default:
		return s, true
	}
	return "", false
}

// text is the string at key, as str, not blank.
func (p params) text(key string, required bool, max int) (string, bool) {
	s, ok := p.str(key, required, max)
	if ok && strings.TrimSpace(s) == "" {
		p.ps.add("%s%s: empty", p.prefix, key)
		return "", false
	}
	return s, ok
}

// path is the absolute path at key, cleaned ("" when absent or wrong).
func (p params) path(key string, required bool) string {
	s, ok := p.text(key, required, maxPath)
	switch {
	case !ok:
		return ""
	case !filepath.IsAbs(s):
		p.ps.add("%s%s: want an absolute path, not %s", p.prefix, key, describe(s))
	default:
		return filepath.Join(p.root, filepath.Clean(s))
	}
	return ""
}

// file is the absolute path of a file to write at key (required; not "/").
func (p params) file(key string) string {
	path := p.path(key, true)
	if path == "/" {
		p.ps.add("%s%s: \"/\" is not a file", p.prefix, key)
		return ""
	}
	return path
}

// seconds is the duration at key in seconds (def when absent): a number,
// over 0 (or at least 0 when zero is allowed), at most maxSeconds.
func (p params) seconds(key string, def float64, zero bool) time.Duration {
	f := def
	if v, ok := p.get(key); ok {
		n, isNum := number(v)
		switch {
		case !isNum:
			p.ps.add("%s%s: want a number of seconds, not %s", p.prefix, key, describe(v))
			return 0
		case n < 0 || n == 0 && !zero || n > maxSeconds:
			want := "over 0"
			if zero {
				want = "0 or more"
			}
			p.ps.add("%s%s: want %s seconds, at most %d, not %s", p.prefix, key, want, maxSeconds, describe(v))
			return 0
		}
		f = n
	}
	return time.Duration(f * float64(time.Second))
}

// count is the whole number at key (def when absent), 0 to max.
func (p params) count(key string, def, max int) int {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	n, isNum := number(v)
	if !isNum || n != math.Trunc(n) || n < 0 || n > float64(max) {
		p.ps.add("%s%s: want a whole number from 0 to %d, not %s", p.prefix, key, max, describe(v))
		return 0
	}
	return int(n)
}

// mode is the file mode at key, an octal string of 3 or 4 digits ("0644"),
// or def when absent.
func (p params) mode(key string, def fs.FileMode) fs.FileMode {
	v, ok := p.get(key)
	if !ok {
		return def
	}
	s, isStr := v.(string)
	if isStr && (len(s) == 3 || len(s) == 4) {
		if m, err := strconv.ParseUint(s, 8, 32); err == nil {
			return unixMode(uint32(m))
		}
	}
	p.ps.add("%s%s: want an octal mode such as \"0644\", as a string, not %s", p.prefix, key, describe(v))
	return def
}

// unixMode turns Unix permission bits (with setuid, setgid and sticky) into
// an fs.FileMode.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
