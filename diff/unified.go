package diff

// Unified returns the unified diff of old and new as diff -u and git diff print
// it: the text of File(name, old, new, context), with the format File
// describes. Use File for the added and removed line counts as well.
//
// A nil old means the file did not exist ("--- /dev/null"), a nil new that it
// was deleted ("+++ /dev/null"); an empty, non-nil slice is an empty file. The
// result is "" when old and new are the same, nil-ness included.
//
// context is the number of unchanged lines shown around each change (git's
// default is 3); a negative context counts as 0, and one longer than the files
// as the whole files.
func Unified(name string, old, new []byte, context int) string {
	return File(name, old, new, clampContext(context, old, new)).Text
}

// clampContext bounds context to [0, more lines than either side has], so that
// File never computes with a negative context or overflows 2*context.
func clampContext(context int, old, new []byte) int {
	return min(max(context, 0), len(old)+len(new)+1)
}
