package scaffold

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// fuel-plugin-builder's checks that `validate` does not make, because nailgun
// accepts what they refuse or because they concern a package being built rather
// than a repository being deployed (fuel_plugin_builder/validators: validator_v3,
// validator_v4 check_deployment_tasks and schemas/v3.py, v4.py). `plugin check`
// makes them on the plugin's own deployment tasks and attributes: the builder's
// errors are errors, its warnings warnings. The README lists what is checked and
// what is not.

// builderTaskTypes are the task types fuel-plugin-builder's schemas know (nailgun
// knows more: role, master_shell, move_to_bootstrap, erase_node).
var builderTaskTypes = []string{"copy_files", "group", "reboot", "shell", "skipped", "stage", "sync", "puppet", "upload_file"}

// builderRoleAliases are the keys fuel-plugin-builder takes for a task's selector
// (it does not know tags).
var builderRoleAliases = []string{"roles", "groups", "role"}

var (
	reStage = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(post_deployment|pre_deployment)(/[-+]?([0-9]*\.[0-9]+|[0-9]+))?$`)
	})
	rePermissions = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-7]{4}$`) })
)

// paramRule is one parameter of a task type's schema: its kind (string, integer)
// and whether it is required.
type paramRule struct {
	key      string
	kind     string
	required bool
	nonEmpty bool // a string of at least one character
}

// builderParams are the parameters schemas of the task types (schemas/v4.py); a
// type whose parameters are required is in builderParamsRequired.
var builderParams = map[string][]paramRule{
	"puppet": {{key: "puppet_manifest", kind: "string", required: true, nonEmpty: true}, {key: "puppet_modules", kind: "string", required: true, nonEmpty: true},
		{key: "timeout", kind: "integer", required: true}, {key: "retries", kind: "integer"}},
	"shell":       {{key: "cmd", kind: "string", required: true}, {key: "retries", kind: "integer"}, {key: "interval", kind: "integer"}, {key: "timeout", kind: "integer"}},
	"reboot":      {{key: "timeout", kind: "integer"}},
	"sync":        {{key: "src", kind: "string", required: true}, {key: "dst", kind: "string", required: true}, {key: "timeout", kind: "integer"}},
	"upload_file": {{key: "path", kind: "string", required: true}, {key: "data", kind: "string", required: true}},
	"copy_files":  {{key: "files", kind: "list", required: true}, {key: "permissions", kind: "permissions"}, {key: "dir_permissions", kind: "permissions"}},
}

var builderParamsRequired = map[string]bool{"copy_files": true, "sync": true, "upload_file": true}

// builderChecks runs fuel-plugin-builder's checks on plugin p.
func builderChecks(p *loader.Plugin) hcl.Diagnostics {
	if p == nil || len(p.Defines) > 0 {
		return nil // a release-as-a-plugin: its graphs are a release's
	}
	var diags hcl.Diagnostics
	pv := p.PackageVersion
	for _, g := range p.Graphs {
		for _, t := range g.Tasks {
			diags = append(diags, builderTaskChecks(t, pv)...)
		}
	}
	diags = append(diags, builderAttributeChecks(p)...)
	// schemas/v2.py releases: os is ubuntu or centos, mode items ha or multinode.
	for _, cp := range p.Compatible {
		if cp.OS != "" && cp.OS != "ubuntu" && cp.OS != "centos" {
			diags = append(diags, errorAt(cp.Range, "releases: os %q is not one of ['ubuntu', 'centos']", cp.OS))
		}
		for _, m := range cp.Mode {
			if m != "ha" && m != "multinode" {
				diags = append(diags, errorAt(cp.Range, "releases: mode %q is not one of ['ha', 'multinode']", m))
			}
		}
	}
	return diags
}

func builderTaskChecks(t *loader.Task, pv string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	data := t.Data
	what := "task " + t.ID
	if t.Type != "" && !slices.Contains(builderTaskTypes, t.Type) {
		diags = append(diags, detail(errorAt(data.Get("type").Range, "There is no such task type:%s", t.Type),
			"fuel-plugin-builder accepts the task types %s in a plugin; nailgun knows %s too, but the builder refuses to build the package.",
			strings.Join(builderTaskTypes, ", "), "role, master_shell, move_to_bootstrap, erase_node"))
		return diags
	}
	// The warning of validator_v4 (and later): a task other than a stage with none of
	// roles, groups, role.
	if pv != "3.0.0" && t.Type != "stage" {
		has := false
		for _, k := range builderRoleAliases {
			if truthy(data.Get(k)) {
				has = true
				break
			}
		}
		if !has {
			d := warnAt(t.Range, "Task %s does not contain %s fields. That may lead to tasks being unassigned to nodes.", t.ID, strings.Join(builderRoleAliases, "/"))
			if data.Has("tags") {
				d = detail(d, "fuel-plugin-builder does not know tags; nailgun and fuelsync select the task's nodes by its tags.")
			} else {
				d = detail(d, "A task without a selector runs on no node (the {id: X, type: skipped} override idiom is the usual exception).")
			}
			diags = append(diags, d)
		}
	}
	if s := data.Get("stage"); s != nil && (!s.IsScalar() || !reStage().MatchString(s.Text)) {
		diags = append(diags, errorAt(s.Range, "%s: stage %q does not match %s", what, s.Text, reStage().String()))
	}
	if re := data.Get("reexecute_on"); re.IsList() {
		for _, it := range re.Items {
			if it.Kind != loader.KindString || it.Text != "deploy_changes" {
				diags = append(diags, errorAt(it.Range, "%s: reexecute_on %s is not one of ['deploy_changes']", what, valueText(it)))
			}
		}
	}
	params := data.Get("parameters")
	if params == nil {
		if builderParamsRequired[t.Type] {
			diags = append(diags, errorAt(t.Range, "%s: 'parameters' is a required property (a %s task)", what, t.Type))
		}
		return diags
	}
	if !params.IsMap() {
		return diags // the loader reports it
	}
	if st := params.Get("strategy"); st != nil {
		diags = append(diags, strategyChecks(st, what)...)
	}
	for _, r := range builderParams[t.Type] {
		v := params.Get(r.key)
		if v == nil {
			if r.required {
				diags = append(diags, errorAt(params.Range, "%s: parameters: '%s' is a required property (a %s task)", what, r.key, t.Type))
			}
			continue
		}
		if msg := paramProblem(r, v); msg != "" {
			diags = append(diags, errorAt(v.Range, "%s: parameters.%s: %s", what, r.key, msg))
		}
	}
	return diags
}

func paramProblem(r paramRule, v *loader.Value) string {
	switch r.kind {
	case "string":
		if v.Kind != loader.KindString {
			return fmt.Sprintf("%s is not of type 'string'", valueText(v))
		}
		if r.nonEmpty && v.Text == "" {
			return "'' is too short"
		}
	case "integer":
		if v.Kind != loader.KindInt {
			return fmt.Sprintf("%s is not of type 'integer'", valueText(v))
		}
	case "permissions":
		if v.Kind != loader.KindString || !rePermissions().MatchString(v.Text) {
			return fmt.Sprintf("%s does not match '^[0-7]{4}$'", valueText(v))
		}
	case "list":
		if !v.IsList() || len(v.Items) == 0 {
			return fmt.Sprintf("%s is not a list of at least one {src, dst}", valueText(v))
		}
		for _, it := range v.Items {
			if !it.IsMap() || it.Get("src").Kind != loader.KindString || it.Get("dst").Kind != loader.KindString {
				return "each file needs src and dst strings"
			}
		}
	}
	return ""
}

func strategyChecks(st *loader.Value, what string) hcl.Diagnostics {
	if !st.IsMap() {
		return hcl.Diagnostics{errorAt(st.Range, "%s: parameters.strategy is not of type 'object'", what)}
	}
	var diags hcl.Diagnostics
	typ := st.Get("type")
	switch {
	case typ == nil:
		diags = append(diags, errorAt(st.Range, "%s: parameters.strategy: 'type' is a required property", what))
	case typ.Kind != loader.KindString || (typ.Text != "parallel" && typ.Text != "one_by_one"):
		diags = append(diags, errorAt(typ.Range, "%s: parameters.strategy.type %s is not one of ['parallel', 'one_by_one']", what, valueText(typ)))
	}
	if a := st.Get("amount"); a != nil && a.Kind != loader.KindInt && !(a.IsMap() && a.Get("yaql_exp").Kind == loader.KindString) {
		diags = append(diags, errorAt(a.Range, "%s: parameters.strategy.amount is neither an integer nor {yaql_exp: ...}", what))
	}
	return diags
}

// builderAttributeChecks is schemas/v3.py attr_element_schema on
// environment_config.yaml: every attribute but metadata has type, label, weight and
// value, its type a string and its weight an integer.
func builderAttributeChecks(p *loader.Plugin) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if !p.Attributes.IsMap() {
		return nil
	}
	for _, f := range p.Attributes.Fields {
		if f.Key == "metadata" || !f.Value.IsMap() {
			continue
		}
		attr := f.Value
		for _, k := range []string{"type", "label", "weight", "value"} {
			if !attr.Has(k) {
				diags = append(diags, errorAt(f.KeyRange, "attributes.%s: '%s' is a required property", f.Key, k))
			}
		}
		if t := attr.Get("type"); t != nil && t.Kind != loader.KindString {
			diags = append(diags, errorAt(t.Range, "attributes.%s.type: %s is not of type 'string'", f.Key, valueText(t)))
		}
		if w := attr.Get("weight"); w != nil && w.Kind != loader.KindInt {
			diags = append(diags, errorAt(w.Range, "attributes.%s.weight: %s is not of type 'integer'", f.Key, valueText(w)))
		}
	}
	return diags
}

func valueText(v *loader.Value) string {
	if v.IsScalar() {
		if v.Kind == loader.KindString {
			return fmt.Sprintf("%q", v.Text)
		}
		return v.Text
	}
	return "a " + v.Kind.String()
}

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

func errorAt(r hcl.Range, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(format, args...), Subject: &r}
}

func warnAt(r hcl.Range, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: fmt.Sprintf(format, args...), Subject: &r}
}

func detail(d *hcl.Diagnostic, format string, args ...any) *hcl.Diagnostic {
	d.Detail = fmt.Sprintf(format, args...)
	return d
}
