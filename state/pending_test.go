package state

import (
	"strings"
	"testing"
)

// TestPendingMatches: what names a pending plan for approve --revision (and
// the API's "revision"): its revision, whole or a prefix of at least 7 hex
// digits (a short commit id), or its artifacts' digest, the same way; case
// does not matter in hex. Anything else names another plan.
func TestPendingMatches(t *testing.T) {
	rev, digest := "2000009e8da479fafd2d3e929a9a33d024e8a074", strings.Repeat("ab12", 16)
	pd := &Pending{Revision: rev, Digest: digest, Base: strings.Repeat("cd", 32)}
	wt := &Pending{Revision: "working-tree", Digest: digest}
	for _, tc := range []struct {
		pd   *Pending
		ref  string
		want bool
	}{
		{pd, rev, true},
		{pd, rev[:12], true},
		{pd, rev[:7], true},
		{pd, strings.ToUpper(rev[:12]), true},
		{pd, digest, true},
		{pd, digest[:12], true},
		{pd, rev[:6], false},       // too short to name anything
		{pd, digest[:6], false},    // so is this
		{pd, "", false},            // nothing named
		{pd, rev + "0", false},     // longer than the revision
		{pd, "3" + rev[1:], false}, // another revision
		{pd, pd.Base, false},       // the applied artifacts' digest, not the plan's
		{pd, "2000009e8da4 ", false},
		{pd, "working-tree", false},
		{wt, "working-tree", true},
		{wt, "working", false},
		{wt, digest[:12], true},
	} {
		if got := tc.pd.Matches(tc.ref); got != tc.want {
			t.Errorf("plan of %s: Matches(%q) = %v, want %v", tc.pd.Revision, tc.ref, got, tc.want)
		}
	}
}

// TestPendingSame: two pending plans are the same when their revision, digest
// and base are; the summary is what they say of themselves.
func TestPendingSame(t *testing.T) {
	a := Pending{Revision: "r1", Digest: "d1", Base: "b1"}
	for _, tc := range []struct {
		b    Pending
		want bool
	}{
		{a, true},
		{Pending{Revision: "r1", Digest: "d1", Base: "b1", Summary: a.Summary}, true},
		{Pending{Revision: "r2", Digest: "d1", Base: "b1"}, false},
		{Pending{Revision: "r1", Digest: "d2", Base: "b1"}, false},
		{Pending{Revision: "r1", Digest: "d1", Base: "b2"}, false},
	} {
		if got := a.Same(&tc.b); got != tc.want {
			t.Errorf("Same(%+v) = %v, want %v", tc.b, got, tc.want)
		}
	}
	if a.Same(nil) {
		t.Error("Same(nil)")
	}
}
