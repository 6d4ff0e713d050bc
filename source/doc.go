// Package source is where revisions come from and where the applied
// artifacts go back to: a Revision (a commit and its files, or the working
// tree), the Sources that yield the newest one (LocalSource, RemoteSource
// through a cache of its own, WorktreeSource with WatchTree), the
// RevisionSources that read a given commit again, and the Publisher that
// commits each applied set to a branch (the rendered-manifests pattern).
//
// It refuses to follow a branch name git would not accept and to publish onto
// the branch it follows, and it says a remote's URL only without its
// credentials. It does not load, validate or render a revision (the operation
// does), and it knows nothing of the work directory: what it publishes is an
// fs.FS.
package source
