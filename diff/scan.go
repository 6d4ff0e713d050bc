package diff

import (
	"bytes"
	"strings"

	"github.com/fuelsync/fuelsync/render"
)

// scannedTask is a task entry of a node file of format 2 as scanNodeV2 reads it.
type scannedTask struct {
	ID       string
	Requires []string
}

// scanNodeV2 reads a node file of format 2 line by line, without a YAML parser,
// when it is written as fuelsync writes nearly every file: the node's name plain,
// each task entry an "id:" line of a plain id and at most a one-line flow list of
// plain requirements. ok is false for anything else (a quoted or unusual value, an
// inline definition, another layout), and the caller decodes the file as YAML: a
// changed cluster's node files are decoded on both sides of every plan, and yaml.v3
// spends milliseconds on each.
func scanNodeV2(data []byte) (node string, tasks []scannedTask, ok bool) {
	i := bytes.Index(data, []byte("\ntasks:"))
	if i < 0 {
		return "", nil, false
	}
	header, rest := data[:i+1], data[i+1:]
	// The header: each key once, in the writer's forms only.
	seen := map[string]bool{}
	list := false // the line before opened a list (roles:, tags:)
	for len(header) > 0 {
		var line []byte
		line, header, _ = bytes.Cut(header, []byte("\n"))
		if item, found := bytes.CutPrefix(line, []byte("  - ")); found && list && render.PlainID(item) {
			continue
		}
		key, v, found := bytes.Cut(line, []byte(":"))
		k := string(key)
		if !found || seen[k] {
			return "", nil, false
		}
		seen[k] = true
		list = false
		switch {
		case k == "format_version" && string(v) == " 2",
			k == "instances" && string(v) == " {}",
			(k == "roles" || k == "tags") && string(v) == " []":
		case (k == "roles" || k == "tags") && len(v) == 0:
			list = true
		case (k == "cluster" || k == "graph" || k == "node") && len(v) > 1 && v[0] == ' ' && plainNode(v[1:]):
			if k == "node" {
				node = string(v[1:])
			}
		default:
			return "", nil, false
		}
	}
	if node == "" {
		return "", nil, false
	}
	line, rest, _ := bytes.Cut(rest, []byte("\n"))
	switch string(line) {
	case "tasks: []":
		return node, nil, len(bytes.TrimSpace(rest)) == 0
	case "tasks:":
	default:
		return "", nil, false
	}
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if id, found := bytes.CutPrefix(line, []byte("  - id: ")); found && render.PlainID(id) {
			tasks = append(tasks, scannedTask{ID: string(id)})
			continue
		}
		list, found := bytes.CutPrefix(line, []byte("    requires: ["))
		if !found || len(tasks) == 0 || tasks[len(tasks)-1].Requires != nil || !bytes.HasSuffix(list, []byte("]")) {
			return "", nil, false
		}
		list = list[:len(list)-1]
		if len(list) == 0 {
			return "", nil, false
		}
		reqs := strings.Split(string(list), ", ")
		for _, r := range reqs {
			task, on, at := strings.Cut(r, "@")
			if !render.PlainID([]byte(task)) || at && !plainNode([]byte(on)) {
				return "", nil, false
			}
		}
		tasks[len(tasks)-1].Requires = reqs
	}
	return node, tasks, true
}

// plainNode reports whether b is a node name as the loader accepts them (a
// lower-case letter or digit, then those, '.', '_', '-'), which has no '@' and,
// after an '@' in a flow list, stays part of a plain string; words YAML reads as
// booleans or null are left to yaml.v3.
func plainNode(b []byte) bool {
	if len(b) == 0 || !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= '0' && b[0] <= '9') {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	switch string(b) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}
