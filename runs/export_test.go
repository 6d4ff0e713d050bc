package runs

// ClaimedDir is claimedDir for the external tests.
var ClaimedDir = claimedDir
