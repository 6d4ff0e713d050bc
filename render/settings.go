package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// The cluster's settings checked as nailgun checks them when they are saved
// (nailgun/api/v1/validators/base.py BasicAttributesValidator.validate_attributes):
// first every attribute of every group on its own (validate_attribute: the value's
// type for the attribute's type, and the regex of a non-empty value), then the whole
// tree (utils/restrictions.py AttributesRestriction.check_data: restrictions, null
// values, list lengths, regexes). Nailgun stops at the first failure; fuelsync
// reports each, at the value in the cluster spec, or where the value comes from when
// the user did not write it.

// regexTimeout bounds one regex match: attribute regexes are Python's (look-aheads
// included), matched by a backtracking engine, and the repository is not trusted.
const regexTimeout = 200 * time.Millisecond

// compiledRegex is an attribute regex, compiled once per builder.
type compiledRegex struct {
	re  *regexp2.Regexp
	err error
}

// attrRegex compiles an attribute's regex source (Python syntax: look-aheads,
// ASCII \w \d \s as Python 2's re without the UNICODE flag).
func (b *builder) attrRegex(src string) *compiledRegex {
	if c, ok := b.regexes[src]; ok {
		return c
	}
	re, err := regexp2.Compile(src, regexp2.RE2)
	if re != nil {
		re.MatchTimeout = regexTimeout
	}
	c := &compiledRegex{re: re, err: err}
	b.regexes[src] = c
	return c
}

// settingsCheck holds the state of checking one cluster's settings.
type settingsCheck struct {
	b     *builder
	m     *Model
	diags hcl.Diagnostics
	// plugins are the plugins compatible with the release, by group name.
	plugins map[string]*loader.Plugin
	// bound maps "group.attribute" to the components: entry whose bind set it.
	bound map[string]hcl.Range
	// regexDone marks the attributes whose regex was checked (validate_attribute and
	// check_data check the same regex; one diagnostic is enough).
	regexDone map[*loader.Value]bool
	// typeBad marks the attributes whose value has the wrong type: check_data's
	// checks of that value are left out (nailgun stops at the type error).
	typeBad map[*loader.Value]bool
}

// checkSettings checks the merged attributes of m. bound maps the paths set by
// component binds to the components: entry that chose them.
func (b *builder) checkSettings(m *Model, plugins map[string]*loader.Plugin, bound map[string]hcl.Range) hcl.Diagnostics {
	sc := &settingsCheck{b: b, m: m, plugins: plugins, bound: bound, regexDone: map[*loader.Value]bool{}, typeBad: map[*loader.Value]bool{}}
	// validate_attribute: every attribute of every group nailgun holds (a disabled
	// plugin's group is not among them).
	for _, g := range fields(m.Attributes) {
		if p := plugins[g.Key]; p != nil && m.Plugin(p.Name) == nil {
			continue
		}
		for _, a := range fields(g.Value) {
			sc.validateAttribute(g.Key, a.Key, a.Value)
		}
	}
	// check_data: the whole tree.
	sc.walk(m.Attributes, nil)
	return sc.diags
}

// origin is where a value of attribute path (group, attribute, ...) is reported: the
// value when the cluster spec writes it, else the components: entry whose bind set
// it, else the plugins: entry of the plugin that defines it, else the cluster's
// release: (a default of the release). The second result says which, for details.
func (sc *settingsCheck) origin(path []string, v *loader.Value) (hcl.Range, string) {
	c := sc.m.Cluster
	if v != nil && v.Range.Filename == c.File && c.File != "" {
		return v.Range, ""
	}
	if len(path) >= 2 {
		if r, ok := sc.bound[path[0]+"."+path[1]]; ok {
			return r, "The value is set by the bind of a chosen component."
		}
	}
	where := ""
	if v != nil {
		where = " (" + at(v.Range) + ")"
	}
	if len(path) >= 1 {
		if ep := sc.m.Plugin(path[0]); ep != nil {
			return ep.Cause.Range, fmt.Sprintf("The value is plugin %s's default%s; set it under settings: to change it.", ep.Plugin.Name, where)
		}
	}
	return c.ReleaseRange, fmt.Sprintf("The value is the release's default%s; set it under settings: to change it.", where)
}

// fail reports a failure of the attribute at path: "<path>: <summary>".
func (sc *settingsCheck) fail(path []string, v *loader.Value, summary, detail string) {
	sc.failf(path, v, strings.Join(path, ".")+": "+summary, detail)
}

// failf reports a failure whose summary (after "cluster C: settings: ") is text.
func (sc *settingsCheck) failf(path []string, v *loader.Value, text, detail string) {
	r, from := sc.origin(path, v)
	d := errorAt(r, "cluster %s: settings: %s", sc.m.Cluster.Name, text)
	d.Detail = strings.TrimSpace(detail + " " + from)
	sc.diags = append(sc.diags, d)
}

// validateAttribute is nailgun's validate_attribute: the value must fit the
// attribute's type, and a non-empty value must match the regex. (Nailgun's schema
// also requires both type and value; an attribute without one is data nailgun's own
// tests use for restrictions, and is not reported.)
func (sc *settingsCheck) validateAttribute(group, name string, attr *loader.Value) {
	if !attr.IsMap() || (!attr.Has("type") && !attr.Has("value")) {
		return
	}
	path := []string{group, name}
	v := attr.Get("value")
	if v == nil {
		return
	}
	if generated(v) {
		return
	}
	typ := attr.Get("type").String()
	if msg := valueTypeProblem(typ, attr, v); msg != "" {
		sc.failf(path, v, strings.Join(path, ".")+".value is "+msg, fmt.Sprintf("Nailgun checks a value against its attribute's type (%s) when the settings are saved.", typ))
		sc.typeBad[attr] = true
		return
	}
	if truthy(v) {
		sc.checkRegex(path, attr)
	}
}

// generated reports whether v is a value nailgun generates when it creates the
// cluster ({generator: password}, {generator: from_settings, ...}): fuelsync cannot
// know it, and nailgun has replaced it by the time settings are saved.
func generated(v *loader.Value) bool { return v.IsMap() && v.Has("generator") }

// valueTypeProblem checks v against nailgun's schema of the value of an attribute of
// type typ (json_schema/base_types.py ATTRIBUTE_TYPE_SCHEMAS); "" when it fits.
func valueTypeProblem(typ string, attr, v *loader.Value) string {
	switch typ {
	case "checkbox":
		if v.Kind != loader.KindBool {
			return fmt.Sprintf("a checkbox: its value is true or false, not %s", describe(v))
		}
	case "text":
		// NULLABLE_STRING: null is the attribute's own business (check_data).
		if v.Kind != loader.KindString && v.Kind != loader.KindNull {
			return fmt.Sprintf("a %s attribute: its value is a string or null, not %s", typ, describeTyped(v))
		}
		return nullableProblem(typ, attr)
	case "number":
		return nullableProblem(typ, attr)
	case "textarea", "password", "radio", "select":
		if v.Kind != loader.KindString {
			return fmt.Sprintf("a %s attribute: its value is a string, not %s", typ, describeTyped(v))
		}
	case "simple_hugepages":
		if v.Kind != loader.KindString && v.Kind != loader.KindInt {
			return fmt.Sprintf("a %s attribute: its value is a string or an integer, not %s", typ, describeTyped(v))
		}
	case "text_list", "textarea_list":
		// MULTIPLE_TEXT_FIELDS_SCHEMA since fuel-web's "text_list attributes could be
		// empty": any number of strings, min and max at least 0 (the lengths are
		// check_data's).
		if !v.IsList() {
			return fmt.Sprintf("a %s attribute: its value is a list of strings, not %s", typ, describeTyped(v))
		}
		for i, it := range v.Items {
			if it.Kind != loader.KindString {
				return fmt.Sprintf("a %s attribute: item %d of its value is %s, not a string", typ, i+1, describeTyped(it))
			}
		}
		for _, k := range []string{"min", "max"} {
			if l := attr.Get(k); l != nil && (l.Kind != loader.KindInt || l.Int < 0) {
				return fmt.Sprintf("a %s attribute: its %s is %s, not a non-negative integer", typ, k, describeTyped(l))
			}
		}
	case "custom_repo_configuration":
		if !v.IsList() || len(v.Items) == 0 {
			return fmt.Sprintf("a %s attribute: its value is a list of at least one repository, not %s", typ, describeTyped(v))
		}
		// jsonschema's tuple form: only the first item is checked.
		first := v.Items[0]
		if !first.IsMap() {
			return fmt.Sprintf("a %s attribute: its first repository is %s, not a mapping", typ, describeTyped(first))
		}
		for _, f := range first.Fields {
			switch f.Key {
			case "name", "section", "suite", "type", "uri":
				if f.Value.Kind != loader.KindString {
					return fmt.Sprintf("a %s attribute: the first repository's %s is %s, not a string", typ, f.Key, describeTyped(f.Value))
				}
			case "priority":
				if f.Value.Kind != loader.KindInt && f.Value.Kind != loader.KindNull {
					return fmt.Sprintf("a %s attribute: the first repository's priority is %s, not an integer or null", typ, describeTyped(f.Value))
				}
			}
		}
	}
	return ""
}

// nullableProblem checks the nullable key of a text or number attribute: a boolean
// when present.
func nullableProblem(typ string, attr *loader.Value) string {
	if n := attr.Get("nullable"); n != nil && n.Kind != loader.KindBool {
		return fmt.Sprintf("a %s attribute: its nullable is %s, not true or false", typ, describeTyped(n))
	}
	return ""
}

func describeTyped(v *loader.Value) string {
	switch v.Kind {
	case loader.KindNull:
		return "null"
	case loader.KindString:
		return fmt.Sprintf("%q", v.Text)
	case loader.KindBool, loader.KindInt, loader.KindFloat:
		return fmt.Sprintf("the %s %s", v.Kind, v.Text)
	}
	return "a " + v.Kind.String()
}

// walk is nailgun's check_data (find_errors) on the node v at path.
func (sc *settingsCheck) walk(v *loader.Value, path []string) {
	if v.IsList() {
		for i, it := range v.Items {
			if it.IsMap() || it.IsList() {
				sc.walk(it, append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]"))
			}
		}
		return
	}
	if !v.IsMap() {
		return
	}
	a := sc.checked(v, path)
	rules := sc.b.attrRestrictions(a.restrictions, path)
	// Hidden attributes are skipped, and so is a disabled group with all it holds.
	if len(sc.held(rules, "hide", path)) > 0 {
		return
	}
	if a.group && !truthy(a.value) {
		return
	}
	typ := v.Get("type")
	isCheckbox := typ.IsScalar() && typ.Text == "checkbox"
	if (isCheckbox || a.group) && truthy(a.value) {
		sc.checkEnabled(v, path, a, rules)
	} else if len(sc.held(rules, "disable", path)) > 0 {
		// A disabled attribute of another type is optional: not checked.
		return
	}
	if !sc.typeBad[v] && !generated(a.value) {
		sc.checkValue(v, path, a)
	}
	for _, f := range v.Fields {
		if f.Key == "metadata" || (!f.Value.IsMap() && !f.Value.IsList()) {
			continue // a scalar holds nothing to check
		}
		sc.walk(f.Value, append(path[:len(path):len(path)], f.Key))
	}
}

// checkedNode is what check_data reads of a mapping: a group (with metadata) or
// an attribute, its value (a group's metadata.enabled), its label and its
// restrictions.
type checkedNode struct {
	group        bool
	value        *loader.Value
	label        string
	restrictions *loader.Value
}

// checked reads the mapping v at path as check_data does. A group's label is its
// plugin's title when it is a plugin's; a node without a label is named by its path
// in messages when its value is truthy or null.
func (sc *settingsCheck) checked(v *loader.Value, path []string) checkedNode {
	var a checkedNode
	a.group = v.Has("metadata")
	if a.group {
		meta := v.Get("metadata")
		a.value = meta.Get("enabled")
		if !meta.Has("enabled") {
			a.value = boolValue(true, meta.Range) // nailgun: metadata.get('enabled', True)
		}
		a.label = meta.Get("label").String()
		a.restrictions = meta.Get("restrictions")
		if len(path) == 1 {
			if p := sc.plugins[path[0]]; p != nil {
				a.label = p.Title // nailgun's plugin group metadata carries the plugin's title
			}
		}
	} else {
		a.value = v.Get("value")
		a.label = v.Get("label").String()
		a.restrictions = v.Get("restrictions")
	}
	if a.label == "" && (truthy(a.value) || a.value.IsNull()) {
		a.label = strings.Join(path, ".") // for messages only
	}
	return a
}

// checkEnabled fails an enabled checkbox or group whose disable restriction holds.
func (sc *settingsCheck) checkEnabled(v *loader.Value, path []string, a checkedNode, rules []*Restriction) {
	for _, r := range sc.held(rules, "disable", path) {
		msg := r.Message
		if msg == "" {
			msg = fmt.Sprintf("restriction with action='%s' and condition='%s' failed due to attribute value='%s'", r.Action, r.Condition, pyStr(a.value))
		}
		target := a.value
		if a.group {
			target = v.Get("metadata").Get("enabled")
		}
		sc.fail(path, target, fmt.Sprintf("Validation failed for attribute '%s': %s", a.label, msg),
			fmt.Sprintf("The restriction %q (%s) holds, so nailgun refuses the %s enabled.", r.Condition, at(r.Range), map[bool]string{true: "group", false: "attribute"}[a.group]))
	}
}

// checkValue checks the value of attribute v: a text or number not nullable is not
// null, a text list's length is within its min and max, and its regex matches.
func (sc *settingsCheck) checkValue(v *loader.Value, path []string, a checkedNode) {
	typ, value := v.Get("type"), a.value
	if typ.IsScalar() && (typ.Text == "text" || typ.Text == "number") && value.IsNull() && !truthy(v.Get("nullable")) {
		sc.fail(path, value, fmt.Sprintf("Null value is forbidden for '%s'", a.label), "Give the attribute a value.")
	}
	if typ.IsScalar() && (typ.Text == "text_list" || typ.Text == "textarea_list") && value.IsList() {
		n := len(value.Items)
		if lo := v.Get("min"); lo != nil && lo.Kind == loader.KindInt && int64(n) < lo.Int {
			sc.fail(path, value, fmt.Sprintf("Value %s should have at least %d items", pyStr(value), lo.Int), "")
		}
		if hi := v.Get("max"); hi != nil && hi.Kind == loader.KindInt && int64(n) > hi.Int {
			sc.fail(path, value, fmt.Sprintf("Value %s should not have more than %d items", pyStr(value), hi.Int), "")
		}
	}
	sc.checkRegex(path, v)
}

// held returns the restrictions of the given action whose condition holds. An
// evaluation error (an undefined value in a strict condition) is reported at the
// condition.
func (sc *settingsCheck) held(rules []*Restriction, action string, path []string) []*Restriction {
	var out []*Restriction
	for _, r := range rules {
		if r.Action != action {
			continue
		}
		ok, err := sc.m.evalCondition(r)
		if err != nil {
			sc.diags = append(sc.diags, exprErrorDiag(loader.NewString(r.Condition, r.Range), err,
				fmt.Sprintf("cluster %s: settings: %s: restriction", sc.m.Cluster.Name, strings.Join(path, "."))))
			continue
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// attrRestrictions parses a `restrictions` list once per builder.
func (b *builder) attrRestrictions(list *loader.Value, path []string) []*Restriction {
	if !list.IsList() {
		return nil
	}
	if rs, ok := b.attrRules[list]; ok {
		return rs
	}
	what := "attribute " + strings.Join(path, ".")
	var rs []*Restriction
	for _, it := range list.Items {
		if r := b.restriction(it, what+": restriction"); r != nil {
			rs = append(rs, r)
		}
	}
	b.attrRules[list] = rs
	return rs
}

// checkRegex is nailgun's validate_regex on the attribute attr at path: a value that
// is not null is matched (re.search) against regex.source; a failure is
// regex.error (no error text, no failure, as in nailgun).
func (sc *settingsCheck) checkRegex(path []string, attr *loader.Value) {
	if sc.regexDone[attr] {
		return
	}
	rx := attr.Get("regex")
	v := attr.Get("value")
	if v.IsNull() || !rx.IsMap() || len(rx.Fields) == 0 || generated(v) {
		return
	}
	sc.regexDone[attr] = true
	src := rx.Get("source")
	if !src.IsScalar() {
		return
	}
	c := sc.b.attrRegex(src.Text)
	if c.err != nil {
		if !sc.b.regexReported[src] {
			sc.b.regexReported[src] = true
			sc.b.dataDiag(withDetail(errorAt(src.Range, "attribute %s: regex %q does not compile: %v", strings.Join(path[:min(2, len(path))], "."), src.Text, strings.TrimPrefix(c.err.Error(), "error parsing regexp: ")),
				"Attribute regexes are Python regular expressions; nailgun fails on one that does not compile."))
		}
		return
	}
	errText := rx.Get("error")
	test := func(item *loader.Value) {
		ok, err := c.re.MatchString(item.Text)
		switch {
		case err != nil:
			sc.fail(path, item, fmt.Sprintf("the regex %q could not be matched against the value in %s", src.Text, regexTimeout),
				fmt.Sprintf("The regex is at %s; its matching backtracks too much on this value.", at(src.Range)))
		case !ok && errText.IsScalar() && errText.Text != "":
			sc.fail(path, item, errText.Text,
				fmt.Sprintf("Nailgun checks the value against the attribute's regex %s (%s); %s does not match.", src.Text, at(src.Range), describeTyped(item)))
		}
	}
	switch {
	case v.Kind == loader.KindString:
		test(v)
	case v.IsList():
		for _, it := range v.Items {
			if it.Kind == loader.KindString {
				test(it)
			}
		}
	default:
		if errText.IsScalar() {
			sc.fail(path, v, fmt.Sprintf("Value %s is of invalid type, cannot check regexp", pyStr(v)),
				fmt.Sprintf("The attribute has a regex (%s), which nailgun can only check on a string or a list of strings.", at(src.Range)))
		}
	}
}

// truthy is Python's truthiness of a value (nil and null are false).
func truthy(v *loader.Value) bool {
	if v == nil {
		return false
	}
	switch v.Kind {
	case loader.KindBool:
		return v.Bool
	case loader.KindInt:
		return v.Int != 0
	case loader.KindFloat:
		return v.Float != 0
	case loader.KindString:
		return v.Text != ""
	case loader.KindList:
		return len(v.Items) > 0
	case loader.KindMap:
		return len(v.Fields) > 0
	}
	return false
}

// pyStr formats v as Python's str() of the value nailgun would hold does, for the
// messages nailgun builds with it.
func pyStr(v *loader.Value) string {
	if v == nil {
		return "None"
	}
	switch v.Kind {
	case loader.KindNull:
		return "None"
	case loader.KindBool:
		if v.Bool {
			return "True"
		}
		return "False"
	case loader.KindString:
		return v.Text
	case loader.KindInt, loader.KindFloat:
		return v.Text
	case loader.KindList:
		parts := make([]string, len(v.Items))
		for i, it := range v.Items {
			parts[i] = pyRepr(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case loader.KindMap:
		parts := make([]string, len(v.Fields))
		for i, f := range v.Fields {
			parts[i] = "'" + f.Key + "': " + pyRepr(f.Value)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return ""
}

func pyRepr(v *loader.Value) string {
	if v != nil && v.Kind == loader.KindString {
		return "'" + strings.ReplaceAll(v.Text, "'", `\'`) + "'"
	}
	return pyStr(v)
}
