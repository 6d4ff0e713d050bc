// Package controller runs the operation on its own, as watch and serve do:
// the Loop reconciles the branch a source follows on every trigger and every
// interval (fetch, then the operation: validate, render what changed, plan,
// lock, apply), keeps its status (each cluster's, the last outcome, the
// problems, capped at MaxProblems), applies approved plans, and publishes
// applied sets to a branch.
//
// A Replica runs a Loop as one of several serve processes on a state on
// etcd. The loop runs the same whatever the replica's kind; a strategy
// around it (strategy.go) says what each reconcile may do: the elected
// leader's reconciles every cluster while it leads (replica.go), a shard's
// the clusters Assign gives it among the live members (shard.go). A replica
// that did not apply a state makes its set itself (Materialise,
// materialise.go: the applied revision rendered again, every file checked
// against the state's digest) and serves it once it matches the state's
// manifest.
//
// It refuses to write once its leadership is lost (the operation asks before
// each step that writes), and serves nothing of a state its own render does
// not reproduce (RenderMismatchError). It decides nothing of a plan (the
// operation does) and stores nothing itself (package state does). It serves
// no HTTP (package server does), but it speaks HTTP to other replicas: a
// shard fetches the files of the clusters other owners rendered from them
// (fetch.go, api.Client.Objects: POST /api/v1/objects of the URL each
// advertises, with serve's API token, each file checked against the state's
// digest). It logs through its slog.Logger and never prints or exits.
package controller
