package loader

import "testing"

func TestEditDistanceCountsTranspositionsOnce(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"roles", "roles", 0},
		{"rolse", "roles", 1}, // adjacent letters swapped
		{"idd", "id", 1},
		{"asign", "assign", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment, not full Damerau
		{"", "tags", 4},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosestShortSuggestsForShortKeys(t *testing.T) {
	known := map[string]bool{"id": true, "roles": true, "tags": true}
	for _, tt := range []struct{ key, want string }{
		{"idd", "id"},
		{"ids", "id"},
		{"rolse", "roles"},
		{"tag", "tags"},
		{"x", ""},   // too short to guess
		{"foo", ""}, // nothing one edit away
		{"hostname", ""},
	} {
		if got := closestShort(tt.key, known); got != tt.want {
			t.Errorf("closestShort(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
