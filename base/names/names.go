// Package names is the rule of the names that become path segments and keys
// (cluster, node and graph names), shared by the loader, which checks the
// repository's, and the agent, which checks its own flags: one rule, in a
// leaf package the agent may link.
package names

// Pattern is the pattern of every such name, for messages: Valid checks it
// byte by byte (it is asked of every node file's address). It cannot spell
// "." or "..", a separator or a hidden file.
const Pattern = `^[a-z0-9][a-z0-9._-]*$`

// MaxLength is the longest such name: with an extension added, a segment
// stays under the 255 bytes file systems allow.
const MaxLength = 128

// Valid reports whether s may become a path segment: it matches Pattern and
// is at most MaxLength bytes.
func Valid(s string) bool {
	if len(s) == 0 || len(s) > MaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}
