// Package server is serve's HTTP side: the webhooks that trigger the loop
// (GitHub, GitLab, Gitea and a generic signed one), the probes, the status
// (GET /api/v1/status, the status page), the clusters and their approval
// (/api/v1/clusters), the node artifact API with its long-polls, the component
// registry of the loaded revision, and /metrics through a Metrics that
// server/prommetrics registers. HTTPServer adds serve's timeouts and the
// connection cap.
//
// Everything an unauthenticated client can make it hold is bounded (bodies,
// delivery ids, waiting requests, connections); a delivery without a valid
// signature or token is refused before it reaches the loop; the read API asks
// for the bearer token when one is set; no credential reaches a page, a status
// or a log. It decides nothing of a reconcile (the controller runs it) and
// serves only artifacts of the applied state, as the state records them.
package server
