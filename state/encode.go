package state

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
)

// artifactsMark stands for the artifacts in encodeState's first encoding: a
// key no artifact has (a name is a clean relative path, checkArtifactName),
// at the one place a field of the state's top level is indented so.
const (
	artifactsKey  = "\x00"
	artifactsMark = "\n  \"artifacts\": {\n    \"\\u0000\": \"\"\n  }"
)

// encodeState is json.MarshalIndent(st, "", "  "), the bytes of a set's
// .state.json, made faster: the artifacts (a fleet's tens of thousands of
// path → sha256 entries, most of the state) are written here rather than by
// reflection, then a second pass that indents them. The rest of the state
// is encoded by encoding/json with one artifact that marks their place.
func encodeState(st *State) ([]byte, error) {
	if _, taken := st.Artifacts[artifactsKey]; len(st.Artifacts) == 0 || taken {
		return json.MarshalIndent(st, "", "  ")
	}
	marked := *st
	marked.Artifacts = map[string]string{artifactsKey: ""}
	rest, err := json.MarshalIndent(&marked, "", "  ")
	if err != nil {
		return nil, err
	}
	at := bytes.Index(rest, []byte(artifactsMark))
	if at < 0 || bytes.Contains(rest[at+len(artifactsMark):], []byte(artifactsMark)) {
		return json.MarshalIndent(st, "", "  ")
	}
	names := slices.Sorted(maps.Keys(st.Artifacts))
	out := make([]byte, 0, len(rest)+len(names)*(len(names[0])+80))
	out = append(out, rest[:at]...)
	out = append(out, "\n  \"artifacts\": {"...)
	for i, name := range names {
		out = append(out, "\n    "...)
		out = appendJSONString(out, name)
		out = append(out, ": "...)
		out = appendJSONString(out, st.Artifacts[name])
		if i < len(names)-1 {
			out = append(out, ',')
		}
	}
	out = append(out, "\n  }"...)
	return append(out, rest[at+len(artifactsMark):]...), nil
}

// appendJSONString appends s as encoding/json writes a string: quoted, and
// escaped as it escapes (left to it for anything but printable ASCII without
// ", \, <, > and &).
func appendJSONString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(out, q...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}
