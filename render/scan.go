package render

import (
	"bytes"
	"strings"
)

// ScanNodeFile reads a node file of format 2 line by line, without a YAML parser,
// when it is written as fuelsync writes nearly every file: a header of plain names
// with format_version 2, each task entry an "id:" line of a plain id and at most a
// one-line flow list of plain requirements. ok is false for anything else (a
// quoted or unusual value, an inline definition, another layout), and the caller
// parses the file (ParseNodeFile, or yaml.v3): what it accepts, YAML reads the
// same. The sync node's view reads every node file of its graph, and a plan reads
// a changed cluster's node files on both sides; yaml.v3 spends milliseconds on
// each. The header bytes of the expanded view are not kept.
func ScanNodeFile(data []byte) (*NodeFile, bool) {
	i := bytes.Index(data, []byte("\ntasks:"))
	if i < 0 {
		return nil, false
	}
	header, rest := data[:i+1], data[i+1:]
	nf := &NodeFile{}
	// The header: each key once, in the writer's forms only.
	seen := map[string]bool{}
	list := false // the line before opened a list (roles:, tags:)
	for len(header) > 0 {
		var line []byte
		line, header, _ = bytes.Cut(header, []byte("\n"))
		if item, found := bytes.CutPrefix(line, []byte("  - ")); found && list && PlainID(item) {
			continue
		}
		key, v, found := bytes.Cut(line, []byte(":"))
		k := string(key)
		if !found || seen[k] {
			return nil, false
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
			switch k {
			case "cluster":
				nf.Cluster = string(v[1:])
			case "graph":
				nf.Graph = string(v[1:])
			default:
				nf.Node = string(v[1:])
			}
		default:
			return nil, false
		}
	}
	if nf.Node == "" || !seen["format_version"] {
		return nil, false
	}
	line, rest, _ := bytes.Cut(rest, []byte("\n"))
	switch string(line) {
	case "tasks: []":
		return nf, len(bytes.TrimSpace(rest)) == 0
	case "tasks:":
	default:
		return nil, false
	}
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if id, found := bytes.CutPrefix(line, []byte("  - id: ")); found && PlainID(id) {
			nf.Tasks = append(nf.Tasks, NodeFileTask{ID: string(id)})
			continue
		}
		items, found := bytes.CutPrefix(line, []byte("    requires: ["))
		if !found || len(nf.Tasks) == 0 || nf.Tasks[len(nf.Tasks)-1].Requires != nil ||
			!bytes.HasSuffix(items, []byte("]")) || len(items) == 1 {
			return nil, false
		}
		reqs := strings.Split(string(items[:len(items)-1]), ", ")
		t := &nf.Tasks[len(nf.Tasks)-1]
		t.Requires = make([]Requirement, len(reqs))
		for j, r := range reqs {
			task, on, at := strings.Cut(r, "@")
			if !PlainID([]byte(task)) || at && !plainNode([]byte(on)) {
				return nil, false
			}
			if !at {
				on = nf.Node
			}
			t.Requires[j] = Requirement{Task: task, Node: on}
		}
	}
	return nf, len(nf.Tasks) > 0 // "tasks:" alone is null, not a list
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
