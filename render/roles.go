package render

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fuelsync/fuelsync/expr"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/hashicorp/hcl/v2"
)

// roleRules are a role's restrictions and limits, parsed once per role however many
// clusters use it.
type roleRules struct {
	restrictions []*Restriction
	limits       *Limits
}

// rules parses the restrictions and limits of a release or plugin role. A plugin
// role gets `settings:<plugin>.metadata.enabled == false` first (nailgun's
// normalized_roles_metadata).
func (b *builder) rules(meta *loader.Role, p *loader.Plugin) *roleRules {
	if rr, ok := b.roleRules[meta]; ok {
		return rr
	}
	rr := &roleRules{}
	b.roleRules[meta] = rr
	what := "role " + meta.Name
	if p != nil {
		cond := loader.NewString(fmt.Sprintf("settings:%s.metadata.enabled == false", p.Name), meta.Range)
		rr.restrictions = append(rr.restrictions, &Restriction{Condition: cond.Text, Action: "disable", Strict: true, Expr: b.parseCondition(cond, what), Range: meta.Range, Implicit: true})
	}
	for _, it := range items(meta.Data.Get("restrictions")) {
		if r := b.restriction(it, what+": restriction"); r != nil {
			rr.restrictions = append(rr.restrictions, r)
		}
	}
	if lv := meta.Data.Get("limits"); lv.IsMap() {
		l := &Limits{Range: lv.Range, Message: lv.Get("message").String()}
		l.Min, l.Max, l.Recommended = b.limitValues(lv, what+": limits")
		for _, o := range items(lv.Get("overrides")) {
			cond := o.Get("condition")
			if !cond.IsScalar() {
				continue // reported by the loader
			}
			ov := &LimitOverride{Message: o.Get("message").String(), Condition: b.restriction(o, what+": limits override")}
			ov.Min, ov.Max, ov.Recommended = b.limitValues(o, what+": limits override")
			l.Overrides = append(l.Overrides, ov)
		}
		rr.limits = l
	}
	return rr
}

// restriction reads one restriction in any of its three forms: a condition string,
// {condition, message, action, strict}, or {<condition>: <message>}.
func (b *builder) restriction(it *loader.Value, what string) *Restriction {
	r := &Restriction{Action: "disable", Strict: true}
	var cond *loader.Value
	switch {
	case it.Kind == loader.KindString:
		cond = it
	case it.IsMap() && it.Has("condition"):
		cond = it.Get("condition")
		r.Message = it.Get("message").String()
		if a := it.Get("action"); a.IsScalar() {
			r.Action = a.Text
		}
		if s := it.Get("strict"); s != nil && s.Kind == loader.KindBool {
			r.Strict = s.Bool
		}
	case it.IsMap() && len(it.Fields) == 1:
		f := it.Fields[0]
		cond = loader.NewString(f.Key, f.KeyRange)
		r.Message = f.Value.String()
	default:
		return nil // reported by the loader
	}
	if !cond.IsScalar() {
		return nil
	}
	r.Condition, r.Range = cond.Text, cond.Range
	r.Expr = b.parseCondition(cond, what)
	return r
}

func (b *builder) limitValues(m *loader.Value, what string) (lmin, lmax, lrec *LimitValue) {
	get := func(key string) *LimitValue {
		v := m.Get(key)
		if v == nil || (v.Kind != loader.KindInt && v.Kind != loader.KindString) {
			return nil
		}
		return &LimitValue{Text: v.Text, Range: v.Range, Expr: b.parseCondition(v, what+"."+key)}
	}
	return get("min"), get("max"), get("recommended")
}

// unknownRole is the diagnostic for a role name the cluster does not have. A role of
// a plugin the cluster does not enable says so.
func (b *builder) unknownRole(m *Model, name string, r hcl.Range, summary string) *hcl.Diagnostic {
	for _, p := range b.repo.Plugins {
		if m.Plugin(p.Name) != nil {
			continue
		}
		for _, role := range p.Roles {
			if role.Name == name {
				return withDetail(errorAt(r, "cluster %s: role %q belongs to plugin %s, which is not enabled", m.Cluster.Name, name, p.Name),
					"Add %s to the cluster's plugins: (it defines the role at %s).", p.Name, at(role.Range))
			}
		}
	}
	names := make([]string, len(m.Roles))
	for i, role := range m.Roles {
		names[i] = role.Name
	}
	return suggest(errorAt(r, "%s", summary), name, names, "roles")
}

// checkNodeRoles checks each node's roles as nailgun's assignment validator does:
// every role exists, no two conflict, and no restriction of a role holds.
func (b *builder) checkNodeRoles(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c := m.Cluster
	for _, n := range c.Nodes {
		var roles []*Role
		var refs []loader.Ref
		for _, ref := range n.Roles {
			r := m.Role(ref.Name)
			switch {
			case r == nil:
				diags = append(diags, b.unknownRole(m, ref.Name, ref.Range,
					fmt.Sprintf("%s are not valid roles for node %s in environment %s", ref.Name, n.Name, c.Name)))
			case slices.Contains(roles, r):
				diags = append(diags, warnAt(ref.Range, "cluster %s: node %s lists role %s twice", c.Name, n.Name, ref.Name))
			default:
				roles = append(roles, r)
				refs = append(refs, ref)
			}
		}
		// Conflicts: each pair once, at the role that declares the conflict.
		reported := map[[2]string]bool{}
		for i, r := range roles {
			var with []string
			for _, o := range roles {
				if o == r || reported[[2]string{o.Name, r.Name}] {
					continue
				}
				if r.ConflictsAll || slices.Contains(r.Conflicts, o.Name) {
					with = append(with, o.Name)
					reported[[2]string{r.Name, o.Name}] = true
				}
			}
			if len(with) > 0 {
				diags = append(diags, withDetail(errorAt(refs[i].Range, "Role '%s' in conflict with role '%s'.", r.Name, strings.Join(with, ", ")),
					"Node %s of cluster %s: the %s's role %s declares conflicts: %s.", n.Name, c.Name, r.Owner(), r.Name, conflictsText(r)))
			}
		}
		// Restrictions: every restriction whose condition holds, whatever its action.
		for i, r := range roles {
			msgs, held, errs := b.satisfied(m, r)
			diags = append(diags, errs...)
			if held {
				diags = append(diags, withDetail(errorAt(refs[i].Range, "Role '%s' restrictions mismatch: %s", r.Name, strings.Join(msgs, ". ")),
					"Node %s of cluster %s: a restriction of the %s's role %s holds (%s).", n.Name, c.Name, r.Owner(), r.Name, heldConditions(m, r)))
			}
		}
	}
	return diags
}

func conflictsText(r *Role) string {
	if r.ConflictsAll {
		return `"*" (every other role)`
	}
	return strings.Join(r.Conflicts, ", ")
}

// satisfied evaluates a role's restrictions: the messages of those that hold, whether
// any holds, and evaluation errors (at the condition, with the column).
func (b *builder) satisfied(m *Model, r *Role) (msgs []string, held bool, diags hcl.Diagnostics) {
	for _, rs := range r.Restrictions {
		ok, err := m.evalCondition(rs)
		if err != nil {
			diags = append(diags, exprErrorDiag(loader.NewString(rs.Condition, rs.Range), err, fmt.Sprintf("cluster %s: role %s: restriction", m.Cluster.Name, r.Name)))
			continue
		}
		if ok {
			held = true
			if rs.Message != "" {
				msgs = append(msgs, rs.Message)
			}
		}
	}
	return msgs, held, diags
}

// heldConditions lists the conditions that hold, for the detail of a mismatch.
func heldConditions(m *Model, r *Role) string {
	var out []string
	for _, rs := range r.Restrictions {
		if ok, err := m.evalCondition(rs); ok && err == nil {
			out = append(out, fmt.Sprintf("%s at %s", rs.Condition, at(rs.Range)))
		}
	}
	return strings.Join(out, "; ")
}

// limitCheck is one violated limit.
type limitCheck struct {
	kind    string // min, max or recommended
	value   int
	message string
}

// checkLimits checks every role's node count against its limits, as nailgun's
// LimitsMixin does: overrides whose condition holds replace the limits they name;
// min and max are errors, recommended a warning. A role that no node carries and
// whose restrictions hold (it is not offered in this cluster) is not checked.
func (b *builder) checkLimits(m *Model) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c := m.Cluster
	carriers := map[string][]loader.Ref{}
	for _, n := range c.Nodes {
		seen := map[string]bool{}
		for _, ref := range n.Roles {
			if !seen[ref.Name] {
				seen[ref.Name] = true
				carriers[ref.Name] = append(carriers[ref.Name], ref)
			}
		}
	}
	for _, r := range m.Roles {
		if r.Limits == nil {
			continue
		}
		refs := carriers[r.Name]
		count := len(refs)
		if count == 0 {
			if _, held, errs := b.satisfied(m, r); held || len(errs) > 0 {
				continue
			}
		}
		violations, errs := m.limitViolations(r, count)
		diags = append(diags, errs...)
		for _, v := range violations {
			subject := c.NodesRange
			switch {
			case v.kind == "max" && v.value < count:
				subject = refs[v.value].Range
			case count > 0:
				subject = refs[0].Range
			}
			var d *hcl.Diagnostic
			switch v.kind {
			case "min":
				d = errorAt(subject, "Role '%s' needs at least %d %s, %d assigned.%s", r.Name, v.value, plural(v.value, "node"), count, sentence(v.message))
			case "max":
				d = errorAt(subject, "Role '%s' allows at most %d %s, %d assigned.%s", r.Name, v.value, plural(v.value, "node"), count, sentence(v.message))
			default:
				d = warnAt(subject, "Role '%s': %d %s recommended, %d assigned.%s", r.Name, v.value, plural(v.value, "node is", "nodes are"), count, sentence(v.message))
			}
			diags = append(diags, withDetail(d, "Cluster %s; the limits of the %s's role %s are at %s.", c.Name, r.Owner(), r.Name, at(r.Limits.Range)))
		}
	}
	return diags
}

// limitViolations evaluates a role's limits for count nodes.
func (m *Model) limitViolations(r *Role, count int) ([]limitCheck, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	what := fmt.Sprintf("cluster %s: role %s: limits", m.Cluster.Name, r.Name)
	var found []limitCheck
	checked := map[string]bool{}
	check := func(kind string, lv *LimitValue, message string) {
		// nailgun skips a limit written as 0 or "" (Python falsiness of the value).
		if lv == nil || lv.Text == "0" || lv.Text == "" {
			return
		}
		checked[kind] = true
		n, err := m.limitInt(lv)
		if err != nil {
			diags = append(diags, exprErrorDiag(loader.NewString(lv.Text, lv.Range), err, what+"."+kind))
			return
		}
		if (kind == "min" && count < n) || (kind == "max" && count > n) || (kind == "recommended" && count < n) {
			found = append(found, limitCheck{kind, n, message})
		}
	}
	for _, o := range r.Limits.Overrides {
		if o.Condition == nil {
			continue
		}
		ok, err := m.evalCondition(o.Condition)
		if err != nil {
			diags = append(diags, exprErrorDiag(loader.NewString(o.Condition.Condition, o.Condition.Range), err, what+" override"))
			continue
		}
		if ok {
			check("min", o.Min, o.Message)
			check("max", o.Max, o.Message)
			check("recommended", o.Recommended, o.Message)
		}
	}
	if !checked["min"] {
		check("min", r.Limits.Min, r.Limits.Message)
	}
	if !checked["max"] {
		check("max", r.Limits.Max, r.Limits.Message)
	}
	if !checked["recommended"] {
		check("recommended", r.Limits.Recommended, r.Limits.Message)
	}
	// One violation per kind: the strictest (highest min and recommended, lowest max).
	var out []limitCheck
	for _, kind := range []string{"min", "max", "recommended"} {
		var best *limitCheck
		for i := range found {
			f := &found[i]
			if f.kind != kind {
				continue
			}
			if best == nil || (kind == "max" && f.value < best.value) || (kind != "max" && f.value > best.value) {
				best = f
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out, diags
}

// limitInt evaluates a limit (nailgun: int(Expression(str(value)).evaluate())).
func (m *Model) limitInt(lv *LimitValue) (int, error) {
	if lv.Expr == nil {
		return 0, fmt.Errorf("the limit does not parse")
	}
	v, err := lv.Expr.Eval(m.Models, true)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case int64:
		return int(x), nil
	case int:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float64:
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			return int(x), nil
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
			return n, nil
		}
	}
	return 0, &expr.Error{Offset: 0, Column: 1, Msg: fmt.Sprintf("the limit is %s, not a whole number", describeAny(v))}
}

func describeAny(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	}
	return fmt.Sprintf("%v", v)
}

func plural(n int, one string, many ...string) string {
	if n == 1 {
		return one
	}
	if len(many) > 0 {
		return many[0]
	}
	return one + "s"
}

func sentence(msg string) string {
	if msg == "" || msg == "Default message" {
		return ""
	}
	return " " + msg
}
