package state

import "strings"

// minRefPrefix is the shortest prefix of a revision or digest that names a
// pending plan (as git's short commit ids are).
const minRefPrefix = 7

// Matches says whether ref names the pending plan p (approve --revision, the
// approve API's "revision"): its revision or its artifacts' digest, whole
// or a prefix of at least 7 hex digits, in either case. So an approval
// pins what the reviewer read: another plan does not match it.
func (p *Pending) Matches(ref string) bool {
	if ref == "" {
		return false
	}
	for _, full := range []string{p.Revision, p.Digest} {
		if ref == full {
			return true
		}
		lower := strings.ToLower(ref)
		if len(ref) >= minRefPrefix && isHex(lower) && isHex(full) && strings.HasPrefix(full, lower) {
			return true
		}
	}
	return false
}

// Same says whether p and o are the same plan: of the same revision, with the
// same artifacts, made against the same applied artifacts.
func (p *Pending) Same(o *Pending) bool {
	return o != nil && p.Revision == o.Revision && p.Digest == o.Digest && p.Base == o.Base
}

// isHex says whether s is lowercase hex digits (not empty).
func isHex(s string) bool {
	return s != "" && isLowerHex(s, len(s))
}
