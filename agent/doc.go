// Package agent is fuelsync's node agent (fuelsync agent, and the small
// fuelsync-agent binary): it asks serve for its node's next task of the
// cluster's deployment run (a long-poll), runs it with the built-in
// executors of agent/executor (or an override per task type), says while it
// runs that it still does (heartbeats), and reports how it ended at once.
// Serve decides the order; the agent runs only what it is given for its own
// node, exactly as rendered.
//
// The agent keeps a small state file (the task it runs, and a result serve
// does not have yet), so that a restarted agent reports what became of the
// task it ran (an earlier agent's leftover process group is stopped by the
// executor) and loses no result. It backs off with jitter while serve is
// away or answers 429 or 503, honouring Retry-After, and follows no
// redirect. It speaks to serve through package api only: it links none of
// the loader, render, diff or git.
package agent
