package loader

import (
	"fmt"
	"regexp"
	"sync"
)

// NamePattern is the pattern of every name from the repository that becomes a
// path segment of the rendered artifacts: cluster names, node names and graph
// types. It cannot spell "." or "..", a separator or a hidden file.
const NamePattern = `^[a-z0-9][a-z0-9._-]*$`

// MaxNameLength is the longest such name: with an extension added, a segment stays
// under the 255 bytes file systems allow.
const MaxNameLength = 128

var reName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(NamePattern) })

// nameMatcher matches NamePattern within MaxNameLength.
type nameMatcher struct{}

func (nameMatcher) MatchString(s string) bool { return IsName(s) }

// IsName reports whether s may become a path segment of the artifacts.
func IsName(s string) bool { return len(s) <= MaxNameLength && reName().MatchString(s) }

// nameRule explains NamePattern for a kind of name ("node names").
func nameRule(what string) string {
	return fmt.Sprintf("%s start with a lowercase letter or digit and continue with lowercase letters, digits, '.', '_' or '-' (%s), at most %d characters, because they become file names", what, NamePattern, MaxNameLength)
}

// ReservedClusterNames are names the artifact layout uses beside the cluster
// directories.
var ReservedClusterNames = map[string]string{
	"manifest.json": "the artifacts' manifest",
}
