package reconcile

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// Hold tells the errors of diags (a load of repo, or release and plugin data)
// apart by the clusters they hold, as the operation does (Operation): an
// error in a cluster's own spec holds that cluster, in a shared input the
// clusters that use it. Errors that hold no cluster are returned apart.
func Hold(repo *loader.Repo, diags hcl.Diagnostics) (held map[string]hcl.Diagnostics, orphans hcl.Diagnostics) {
	held = map[string]hcl.Diagnostics{}
	orphans = newAttribution(repo, nil).attribute(diags, held)
	return held, orphans
}
