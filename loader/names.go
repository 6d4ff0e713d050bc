package loader

import (
	"fmt"

	"github.com/fuelsync/fuelsync/base/names"
)

// NamePattern is the pattern of every name from the repository that becomes a
// path segment of the rendered artifacts: cluster names, node names and graph
// types (names.Pattern).
const NamePattern = names.Pattern

// MaxNameLength is the longest such name (names.MaxLength).
const MaxNameLength = names.MaxLength

// nameMatcher matches NamePattern within MaxNameLength.
type nameMatcher struct{}

func (nameMatcher) MatchString(s string) bool { return IsName(s) }

// IsName reports whether s may become a path segment of the artifacts.
func IsName(s string) bool { return names.Valid(s) }

// nameRule explains NamePattern for a kind of name ("node names").
func nameRule(what string) string {
	return fmt.Sprintf("%s start with a lowercase letter or digit and continue with lowercase letters, digits, '.', '_' or '-' (%s), at most %d characters, because they become file names", what, NamePattern, MaxNameLength)
}

// ReservedClusterNames are names the artifact layout uses beside the cluster
// directories.
var ReservedClusterNames = map[string]string{
	"manifest.json": "the artifacts' manifest",
}
