package cli

import (
	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/operation"
)

// renderFailpoints makes op's loads and renders the failpoints cli/load,
// cli/render and cli/render-applied (tests count them: a plan with nothing
// changed renders nothing). Without the tag fuelsync_testhooks, as
// released, it does nothing and op has no callbacks.
func renderFailpoints(op *operation.Operation) {
	if !failpoint.Enabled {
		return
	}
	op.OnLoad = func() { _ = failpoint.Inject(failpoint.CLILoad) }
	op.OnRender = func(clusters []string) { _ = failpoint.Inject(failpoint.CLIRender, clusters...) }
	op.OnRenderApplied = func(clusters []string) { _ = failpoint.Inject(failpoint.CLIRenderApplied, clusters...) }
}

// serveShardFailpoint is the failpoint cli/serve-shard, where serve --shard
// has built its shard (make bench-shards profiles the replicas there).
func serveShardFailpoint() { _ = failpoint.Inject(failpoint.ServeShard) }
