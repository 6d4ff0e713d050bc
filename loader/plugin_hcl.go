package loader

import "github.com/hashicorp/hcl/v2"

// pluginFromHCL reads a plugin written as one plugin.hcl (SPEC §3.4).
func (l *loadCtx) pluginFromHCL(metaFile string) (*pluginDoc, hcl.Diagnostics) {
	return nil, hcl.Diagnostics{errorAt(fileRange(metaFile), "plugin.hcl is not supported yet")}
}
