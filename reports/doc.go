// Package reports keeps what nodes' agents report back: which graph each node
// ran (the ETag of the artifact it was served), how it went (running,
// success, failed) and each task's status; and from that, each cluster's
// convergence (nodes converged, progressing, failed) and health (healthy,
// degraded, progressing, unknown).
//
// A report is checked before anything keeps it (Parse: its size, its number
// of tasks, every text's length and characters), and a node proves who it is
// with its own token, an HMAC of its cluster and node names under serve's
// agent secret (Token, CheckToken).
//
// Reports are kept in the state backend beside the applied sets (Backend):
// the work directory (Workdir: files under <workdir>/reports/, written
// atomically) or etcd (etcdstate, under the prefix's .fuelsync/
// namespace): every node's last report and a bounded history (the last
// HistoryKeep reports of each node, the last ReconcileKeep reconciles of each
// cluster), the oldest dropped first. A Store holds the last report of every
// node in memory (without its tasks) for the health of every cluster, and
// reads the history from the backend when it is asked for.
//
// The package does not serve HTTP, print or exit; it reads no repository.
package reports
