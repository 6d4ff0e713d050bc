package render

import (
	"testing"
)

// The settings checks (settings.go), one case per rule of nailgun's
// validate_attribute and AttributesRestriction.check_data, on a small release with
// attributes written for them and three plugins.

const setMeta = `name: rel
title: A release
version: 1.0.0
package_version: 5.0.0
description: A release with attributes for the settings checks
licenses: [Apache-2.0]
authors: [fuelsync]
homepage: https://example.com/rel
groups: []
releases:
  - is_release: true
    release_name: rel
    description: rel
    operating_system: Ubuntu
    version: rel-1.0
    base_release_path: release.yaml
`

const setRelease = `roles_metadata:
  controller: {name: Controller, description: Control plane}
tags_metadata:
  controller: {has_primary: true}
components_metadata:
  - name: hypervisor:qemu
    label: QEMU
  - name: storage:block:odd
    label: Odd
    bind: !!pairs
      - "settings:common.port.value": "5 1 4"
attributes_metadata:
  editable:
    common:
      metadata: {label: Common, weight: 10}
      debug: {value: false, type: checkbox, label: Debug}
      murano: {value: false, type: checkbox, label: Murano}
      cfapi:
        value: false
        type: checkbox
        label: CF API
        restrictions:
          - condition: "settings:common.murano.value == false"
            message: "Murano should be enabled"
      l3_ha:
        value: false
        type: checkbox
        label: L3 HA
        restrictions:
          - "settings:common.dvr.value == true"
      dvr: {value: false, type: checkbox, label: DVR}
      hidden_name:
        value: ""
        type: text
        label: Hidden name
        regex: {source: '\S', error: "Empty hidden name"}
        restrictions:
          - condition: "settings:common.debug.value == false"
            action: hide
      optional_url:
        value: ""
        type: text
        label: Optional URL
        regex: {source: '^https?://', error: "Invalid URL"}
        restrictions:
          - condition: "settings:common.debug.value == false"
            action: disable
      enabled_by:
        value: "x"
        type: text
        label: Enabled by
        regex: {source: '\S', error: "Empty enabled-by"}
        restrictions:
          - condition: "settings:common.debug.value == false"
            action: enable
      none_action:
        value: "x"
        type: text
        label: None action
        regex: {source: '\S', error: "Empty none-action"}
        restrictions:
          - condition: "settings:common.debug.value == false"
            action: none
      port: {value: "514", type: text, label: Port, regex: {source: '^\d+$', error: "Invalid port"}}
      user: {value: admin, type: text, label: User, regex: {source: '^(?!nova$)(?!.* +.*$).+', error: "Invalid username"}}
      probe:
        value: true
        type: checkbox
        label: Probe
        restrictions:
          - condition: "settings:common.missing.value == true"
            strict: false
            message: "never shown"
      servers:
        value: [alpha]
        type: text_list
        min: 1
        max: 2
        label: Servers
        regex: {source: '^[a-z]+$', error: "Invalid server"}
      count: {value: 1, type: number, label: Count}
      secret: {value: {generator: password}, type: password, label: Secret, regex: {source: '\S', error: "Empty secret"}}
      mode:
        value: a
        type: radio
        label: Mode
        values: [{data: a, label: A}, {data: b, label: B}]
    storage:
      metadata: {label: Storage, enabled: false, toggleable: true}
      path: {value: "", type: text, label: Path, regex: {source: '\S', error: "Empty path"}}
`

// pluginMeta is the metadata of a package_version 4.0.0 plugin named name that
// extends rel-1.0.
func pluginMeta(name, title string) string {
	return `name: ` + name + `
title: ` + title + `
version: 1.0.0
package_version: 4.0.0
fuel_version: ['9.0']
description: A plugin
licenses: [Apache-2.0]
authors: [fuelsync]
homepage: https://example.com/p
groups: [storage]
is_hotpluggable: false
releases:
  - os: ubuntu
    version: rel-1.0
    mode: [ha]
`
}

const setCluster = `cluster: prod
release: rel-1.0
plugins: []
components: [hypervisor:qemu]
settings:
  common.murano.value: false
nodes:
  node-1: {id: 1, roles: [controller]}
`

func settingsFiles() map[string]string {
	files := map[string]string{
		"plugins/rel/metadata.yaml": setMeta,
		"plugins/rel/release.yaml":  setRelease,
		"clusters/prod.yaml":        setCluster,
		// An LDAP plugin whose fields are empty by default, each with a regex.
		"plugins/ldap/metadata.yaml": pluginMeta("ldap", "LDAP"),
		"plugins/ldap/environment_config.yaml": `attributes:
  domain: {value: "", type: text, label: Domain, regex: {source: '^\S+$', error: "Invalid domain"}}
  url: {value: "ldap://", type: text, label: URL, regex: {source: '^ldaps?://\S+$', error: "Invalid URL"}}
`,
		"plugins/redis/metadata.yaml": pluginMeta("redis", "Redis"),
		// A plugin that must not be enabled together with redis (its group's metadata
		// restriction).
		"plugins/cache/metadata.yaml": pluginMeta("cache", "Cache plugin"),
		"plugins/cache/environment_config.yaml": `attributes:
  metadata:
    restrictions:
      - condition: "settings:redis.metadata.enabled == true"
        message: "Cache cannot be used with Redis plugin enabled"
  size: {value: "64", type: text, label: Size}
`,
		// A plugin whose defaults are an empty text_list (min 0) and null texts: one
		// nullable, one hidden and one disabled until forwarding is on.
		"plugins/dns/metadata.yaml": pluginMeta("dns", "DNS"),
		"plugins/dns/environment_config.yaml": `attributes:
  servers:
    value: []
    type: text_list
    min: 0
    max: 3
    label: DNS servers
    regex: {source: '^\d+\.\d+\.\d+\.\d+$', error: "Invalid IP address"}
  domain: {value: null, type: text, nullable: true, label: Search domain}
  forwarding: {value: false, type: checkbox, label: Forwarding}
  forwarder:
    value: null
    type: text
    label: Forwarder
    restrictions:
      - condition: "settings:dns.forwarding.value == false"
        action: hide
  key:
    value: null
    type: text
    label: TSIG key
    restrictions:
      - condition: "settings:dns.forwarding.value == false"
        message: "Forwarding must be on"
`,
	}
	for _, p := range []string{"ldap", "redis", "cache", "dns"} {
		files["plugins/"+p+"/deployment_scripts/.keep"] = ""
		files["plugins/"+p+"/repositories/ubuntu/.keep"] = ""
	}
	return files
}

func TestSettingsChecks(t *testing.T) {
	const cl = "clusters/prod.yaml"
	const rel = "plugins/rel/release.yaml"
	set := func(lines ...string) edit {
		add := ""
		for _, l := range lines {
			add += "  " + l + "\n"
		}
		return edit{cl, "  common.murano.value: false\n", "  common.murano.value: false\n" + add}
	}
	atRelease := func(summary string) diagAt {
		return diagAt{file: cl, lineOf: "release:", token: "rel-1.0", summary: summary}
	}
	for _, tc := range []struct {
		name  string
		edits []edit
		want  []diagAt
	}{
		// Defaults: a hidden attribute, a disabled text attribute, a generated value, a
		// disabled group, a disabled plugin's empty fields: nothing to report.
		{name: "defaults are valid"},
		{
			name:  "regex",
			edits: []edit{set(`common.port.value: "51a"`)},
			want:  []diagAt{{file: cl, lineOf: "common.port", token: `"51a"`, summary: "cluster prod: settings: common.port: Invalid port"}},
		},
		{
			name:  "regex with look-aheads (Python syntax)",
			edits: []edit{set(`common.user.value: nova`)},
			want:  []diagAt{{file: cl, lineOf: "common.user", token: "nova", summary: "cluster prod: settings: common.user: Invalid username"}},
		},
		{
			name:  "regex with look-aheads, matching",
			edits: []edit{set(`common.user.value: novak`)},
		},
		{
			name:  "regex on each item of a list",
			edits: []edit{set(`common.servers.value: [alpha, "B1"]`)},
			want:  []diagAt{{file: cl, lineOf: "common.servers", token: `"B1"`, summary: "cluster prod: settings: common.servers: Invalid server"}},
		},
		{
			name:  "list shorter than min",
			edits: []edit{set(`common.servers.value: []`)},
			want:  []diagAt{{file: cl, lineOf: "common.servers", token: "[]", summary: "cluster prod: settings: common.servers: Value [] should have at least 1 items"}},
		},
		{
			name:  "list of the wrong type",
			edits: []edit{set(`common.servers.value: alpha`)},
			want: []diagAt{{file: cl, lineOf: "common.servers", token: "alpha",
				summary: `cluster prod: settings: common.servers.value is a text_list attribute: its value is a list of strings, not "alpha"`}},
		},
		{
			name:  "list min below 0",
			edits: []edit{{rel, "        min: 1\n", "        min: -1\n"}},
			want:  []diagAt{atRelease("cluster prod: settings: common.servers.value is a text_list attribute: its min is the integer -1, not a non-negative integer")},
		},
		{
			// dns.servers is [] with min 0: valid (fuel-web's "text_list attributes
			// could be empty"); its null texts are nullable, hidden and disabled.
			name:  "empty list with min 0, null texts nullable, hidden and disabled",
			edits: []edit{{cl, "plugins: []", "plugins: [dns]"}},
		},
		{
			name:  "list with min 0 and max 3, set",
			edits: []edit{{cl, "plugins: []", "plugins: [dns]"}, set(`dns.servers.value: [8.8.8.8, 8.8.4.4]`)},
		},
		{
			name:  "list with min 0 and max 3, one item too many",
			edits: []edit{{cl, "plugins: []", "plugins: [dns]"}, set(`dns.servers.value: [1.1.1.1, 2.2.2.2, 3.3.3.3, 4.4.4.4]`)},
			want: []diagAt{{file: cl, lineOf: "dns.servers", token: "[1.1.1.1",
				summary: "cluster prod: settings: dns.servers: Value ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'] should not have more than 3 items"}},
		},
		{
			name:  "list with min 0, an item failing the regex",
			edits: []edit{{cl, "plugins: []", "plugins: [dns]"}, set(`dns.servers.value: [8.8.8.8, dns.example.com]`)},
			want:  []diagAt{{file: cl, lineOf: "dns.servers", token: "dns.example.com", summary: "cluster prod: settings: dns.servers: Invalid IP address"}},
		},
		{
			// Forwarding on: the forwarder is no longer hidden nor the key disabled,
			// and neither is nullable.
			name:  "null texts visible and enabled",
			edits: []edit{{cl, "plugins: []", "plugins: [dns]"}, set(`dns.forwarding.value: true`)},
			want: []diagAt{
				{file: cl, lineOf: "plugins:", token: "dns", summary: "cluster prod: settings: dns.forwarder: Null value is forbidden for 'Forwarder'"},
				{file: cl, lineOf: "plugins:", token: "dns", summary: "cluster prod: settings: dns.key: Null value is forbidden for 'TSIG key'"},
			},
		},
		{
			name:  "null text set in the cluster",
			edits: []edit{set(`common.port.value: null`)},
			want:  []diagAt{{file: cl, lineOf: "common.port", token: "null", summary: "cluster prod: settings: common.port: Null value is forbidden for 'Port'"}},
		},
		{
			name:  "null text set in the cluster, hidden",
			edits: []edit{set(`common.hidden_name.value: null`)},
		},
		{
			name:  "nullable not a boolean",
			edits: []edit{{cl, "plugins: []", "plugins: [dns]"}, {"plugins/dns/environment_config.yaml", "nullable: true", `nullable: "yes"`}},
			want: []diagAt{{file: cl, lineOf: "plugins:", token: "dns",
				summary: `cluster prod: settings: dns.domain.value is a text attribute: its nullable is "yes", not true or false`}},
		},
		{
			name:  "list longer than max",
			edits: []edit{set(`common.servers.value: [a, b, c]`)},
			want:  []diagAt{{file: cl, lineOf: "common.servers", token: "[a, b, c]", summary: "cluster prod: settings: common.servers: Value ['a', 'b', 'c'] should not have more than 2 items"}},
		},
		{
			name:  "restriction with action disable and a message, on an enabled checkbox",
			edits: []edit{set(`common.cfapi.value: true`)},
			want: []diagAt{{file: cl, lineOf: "common.cfapi", token: "true",
				summary: "cluster prod: settings: common.cfapi: Validation failed for attribute 'CF API': Murano should be enabled"}},
		},
		{
			name:  "restriction with action disable that does not hold",
			edits: []edit{set(`common.cfapi.value: true`), {cl, "common.murano.value: false", "common.murano.value: true"}},
		},
		{
			name:  "restriction as a string, no message",
			edits: []edit{set(`common.dvr.value: true`, `common.l3_ha.value: true`)},
			want: []diagAt{{file: cl, lineOf: "common.l3_ha", token: "true",
				summary: "cluster prod: settings: common.l3_ha: Validation failed for attribute 'L3 HA': restriction with action='disable' and condition='settings:common.dvr.value == true' failed due to attribute value='True'"}},
		},
		{
			// With debug on, hidden_name is no longer hidden and optional_url no longer
			// disabled: their empty defaults fail, reported at release: (the user wrote
			// neither).
			name:  "restrictions with actions hide and disable lifted",
			edits: []edit{set(`common.debug.value: true`)},
			want: []diagAt{
				atRelease("cluster prod: settings: common.hidden_name: Empty hidden name"),
				atRelease("cluster prod: settings: common.optional_url: Invalid URL"),
			},
		},
		{
			name:  "restriction with action enable holds: the attribute is checked all the same",
			edits: []edit{set(`common.enabled_by.value: ""`)},
			want:  []diagAt{{file: cl, lineOf: "common.enabled_by", token: `""`, summary: "cluster prod: settings: common.enabled_by: Empty enabled-by"}},
		},
		{
			name:  "restriction with action none holds: the attribute is checked all the same",
			edits: []edit{set(`common.none_action.value: ""`)},
			want:  []diagAt{{file: cl, lineOf: "common.none_action", token: `""`, summary: "cluster prod: settings: common.none_action: Empty none-action"}},
		},
		{
			// strict: false makes the undefined common.missing null; strict (the
			// default) makes it an error, as nailgun raises there.
			name:  "strict restriction with an undefined value",
			edits: []edit{{rel, "            strict: false\n", ""}},
			want: []diagAt{{file: rel, lineOf: "common.missing", token: "settings:common.missing.value",
				summary: `cluster prod: settings: common.probe: restriction: value of settings:common.missing.value is undefined: settings:common has no key "missing" in "settings:common.missing.value == true"`}},
		},
		{
			name:  "checkbox value of the wrong type",
			edits: []edit{set(`common.dvr.value: "yes"`)},
			want: []diagAt{{file: cl, lineOf: "common.dvr", token: `"yes"`,
				summary: `cluster prod: settings: common.dvr.value is a checkbox: its value is true or false, not "yes"`}},
		},
		{
			name:  "text value of the wrong type",
			edits: []edit{set(`common.port.value: 514`)},
			want: []diagAt{{file: cl, lineOf: "common.port", token: "514",
				summary: "cluster prod: settings: common.port.value is a text attribute: its value is a string or null, not the integer 514"}},
		},
		{
			name:  "null value",
			edits: []edit{set(`common.count.value: null`)},
			want:  []diagAt{{file: cl, lineOf: "common.count", token: "null", summary: "cluster prod: settings: common.count: Null value is forbidden for 'Count'"}},
		},
		{
			// Without a label, a message names the attribute by its path.
			name:  "null value of an attribute without a label",
			edits: []edit{{rel, "type: number, label: Count}", "type: number}"}, set(`common.count.value: null`)},
			want:  []diagAt{{file: cl, lineOf: "common.count", token: "null", summary: "cluster prod: settings: common.count: Null value is forbidden for 'common.count'"}},
		},
		{
			name:  "a disabled group is not checked until enabled",
			edits: []edit{set(`storage.metadata.enabled: true`)},
			want:  []diagAt{atRelease("cluster prod: settings: storage.path: Empty path")},
		},
		{
			// ldap is compatible but not enabled: its empty domain is not checked (the
			// defaults case). Enabled, the default fails, reported at the plugins: entry.
			name:  "an enabled plugin's defaults",
			edits: []edit{{cl, "plugins: []", "plugins: [ldap]"}},
			want: []diagAt{
				{file: cl, lineOf: "plugins:", token: "ldap", summary: "cluster prod: settings: ldap.domain: Invalid domain"},
				{file: cl, lineOf: "plugins:", token: "ldap", summary: "cluster prod: settings: ldap.url: Invalid URL"},
			},
		},
		{
			name:  "an enabled plugin's values set",
			edits: []edit{{cl, "plugins: []", "plugins: [ldap]"}, set(`ldap.domain.value: example.com`, `ldap.url.value: "ldap://ldap.example.com"`)},
		},
		{
			name:  "a plugin whose metadata restriction forbids another plugin",
			edits: []edit{{cl, "plugins: []", "plugins: [redis, cache]"}},
			want: []diagAt{{file: cl, lineOf: "plugins:", token: "cache",
				summary: "cluster prod: settings: cache: Validation failed for attribute 'Cache plugin': Cache cannot be used with Redis plugin enabled"}},
		},
		{
			name:  "the same plugin alone",
			edits: []edit{{cl, "plugins: []", "plugins: [cache]"}},
		},
		{
			name:  "a value set by a component's bind",
			edits: []edit{{cl, "components: [hypervisor:qemu]", "components: [hypervisor:qemu, storage:block:odd]"}},
			want:  []diagAt{{file: cl, lineOf: "components:", token: "storage:block:odd", summary: "cluster prod: settings: common.port: Invalid port"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := applyEdits(t, settingsFiles(), tc.edits)
			_, _, diags := checkRepo(t, mapFS(files))
			expectDiags(t, files, diags, tc.want...)
		})
	}
}

// TestSettingsRegexBounded: a regex that backtracks without end on a value is
// stopped and reported, not run for ever; one that does not compile is reported once
// at its source.
func TestSettingsRegexBounded(t *testing.T) {
	const rel = "plugins/rel/release.yaml"
	const cl = "clusters/prod.yaml"
	files := applyEdits(t, settingsFiles(), []edit{
		{rel, "    storage:\n", "      slow: {value: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\", type: text, regex: {source: '^(a+)+$', error: \"no\"}}\n" +
			"      broken: {value: \"x\", type: text, regex: {source: '(', error: \"no\"}}\n    storage:\n"},
	})
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags,
		diagAt{file: cl, lineOf: "release:", token: "rel-1.0", summary: `cluster prod: settings: common.slow: the regex "^(a+)+$" could not be matched against the value in 200ms`},
		diagAt{file: rel, lineOf: "broken:", token: "'('", summary: `attribute common.broken: regex "(" does not compile: missing closing ) in ` + "`(`"},
	)
}

// TestSettingsAbsentValue: a text attribute of an enabled plugin without a value at
// all is null to nailgun (data.get('value')): reported at the plugins: entry.
func TestSettingsAbsentValue(t *testing.T) {
	const cl = "clusters/prod.yaml"
	files := applyEdits(t, settingsFiles(), []edit{
		{cl, "plugins: []", "plugins: [cache]"},
		{"plugins/cache/environment_config.yaml", `  size: {value: "64", type: text, label: Size}`, `  size: {type: text, label: Size}`},
	})
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags, diagAt{file: cl, lineOf: "plugins:", token: "cache", summary: "cluster prod: settings: cache.size: Null value is forbidden for 'Size'"})
}
