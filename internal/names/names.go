// Package names is the rule of the names that become path segments and keys
// (cluster, node and graph names), shared by the loader, which checks the
// repository's, and the agent, which checks its own flags: one rule, in a
// leaf package the agent may link.
package names

import (
	"regexp"
	"sync"
)

// Pattern is the pattern of every such name. It cannot spell "." or "..", a
// separator or a hidden file.
const Pattern = `^[a-z0-9][a-z0-9._-]*$`

// MaxLength is the longest such name: with an extension added, a segment
// stays under the 255 bytes file systems allow.
const MaxLength = 128

var re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(Pattern) })

// Valid reports whether s may become a path segment.
func Valid(s string) bool { return len(s) <= MaxLength && re().MatchString(s) }
