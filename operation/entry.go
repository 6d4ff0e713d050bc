package operation

import (
	"context"

	"github.com/fuelsync/fuelsync/state"
)

// The typed entry points: each sets the fields of req that say what kind of
// run it is (Apply, Saved, Approve) and runs it. Run itself takes any
// Request, as they do.

// Plan plans req's revision and applies nothing (fuelsync plan, a dry-run
// loop).
func (o *Operation) Plan(ctx context.Context, req Request) (*Result, error) {
	req.Apply, req.Saved, req.SavedName, req.Approve = false, nil, "", nil
	return o.Run(ctx, req)
}

// Apply plans req's revision and applies the plan under the lock (fuelsync
// apply, the loop's reconcile).
func (o *Operation) Apply(ctx context.Context, req Request) (*Result, error) {
	req.Apply, req.Saved, req.SavedName, req.Approve = true, nil, "", nil
	return o.Run(ctx, req)
}

// ApplySaved applies the saved plan p exactly (fuelsync apply PLANFILE):
// req's revision, rendered again, must give its artifacts; name names it in
// messages.
func (o *Operation) ApplySaved(ctx context.Context, req Request, p *Plan, name string) (*Result, error) {
	req.Apply, req.Saved, req.SavedName, req.Approve = true, p, name, nil
	return o.Run(ctx, req)
}

// Approve applies the pending plan of cluster (fuelsync approve): req's
// revision must be the plan's, and the plan made again must give its
// artifacts.
func (o *Operation) Approve(ctx context.Context, req Request, cluster string, pending *state.Pending) (*Result, error) {
	req.Apply, req.Saved, req.SavedName, req.Approve, req.Targets = true, nil, "", pending, []string{cluster}
	return o.Run(ctx, req)
}
