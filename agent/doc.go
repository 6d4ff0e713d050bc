// Package agent is fuelsync's reference node agent (`fuelsync agent`): it
// long-polls its node's applied graph from serve's artifact API, runs a
// command with the graph, and reports the run back to serve
// (POST /api/v1/clusters/<c>/nodes/<n>/reports). fuelsync runs no puppet
// itself: the command is where astute, Ansible or a script plugs in.
//
// The agent keeps a small state file (the ETag of the last graph it ran, and
// that run's report until serve has it) so that a restarted agent neither runs
// the same graph again nor loses a result. It backs off with jitter while
// serve is away or answers 429 or 503, honouring Retry-After. It is a client
// only: it imports reports (the report's wire form and checks) and nothing
// of serve.
package agent
