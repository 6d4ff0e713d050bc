// Package controller runs the operation on its own, as watch and serve do:
// the Loop reconciles the branch a source follows on every trigger and every
// interval (fetch, then the operation: validate, render what changed, plan,
// lock, apply), keeps its status (each cluster's, the last outcome, the
// problems, capped at MaxProblems), applies approved plans, and publishes
// applied sets to a branch. A Replica runs a Loop as one of several serve
// processes on a state on etcd: the elected leader reconciles; a follower
// renders the applied revision itself (Materialise) and serves it once it
// matches the state's manifest.
//
// It refuses to write once its leadership is lost (the operation asks before
// each step that writes), and serves nothing of a state its own render does
// not reproduce (RenderMismatchError). It decides nothing of a plan (the
// operation does) and stores nothing itself (package state does). It serves no
// HTTP (package server does); its one HTTP client is a shard's fetch of the
// files other owners rendered (fetch.go: POST /api/v1/objects, each file
// checked against the state's digest). It logs through its slog.Logger and
// never prints or exits.
package controller
