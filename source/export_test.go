package source

// FollowedBranch is followedBranch (for a RemoteSource, the branch it
// resolved), for the tests of package source_test.
var FollowedBranch = followedBranch
