package server

import (
	"html/template"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/state"
)

// The pages say every status with a colour and a glyph, as Argo CD does: a
// status is never told by its colour alone. The colours are the pages'
// style's (.st-<value>); the glyphs are in common fonts.
var glyphs = map[string]string{
	// A cluster's status.
	state.StatusSynced: "✔", state.StatusOutOfSync: "↻", state.StatusHeld: "✖",
	state.StatusSuspended: "‖", state.StatusAwaitingApproval: "⌛",
	// A cluster's health and a node's state.
	reports.Healthy: "♥", reports.Degraded: "⚠", reports.Progressing: "◔", reports.Unknown: "?",
	reports.Converged: "✔",
	// A report's, a run's, a task's status (and a node's failed).
	reports.Success: "✔", api.RunSucceeded: "✔", api.RunFailed: "✖", api.RunRunning: "▶",
	api.RunStopping: "■", "dep_failed": "⊘", api.TaskSkipped: "↷", "pending": "○",
}

// badgeStyle is the colours of the statuses, for the pages' style.
const badgeStyle = `.st-synced,.st-healthy,.st-converged,.st-success,.st-succeeded{color:#137333}
.st-held,.st-degraded,.st-failed,.st-error{color:#b3261e}.st-dep_failed{color:#b35c00}
.st-out_of_sync,.st-progressing,.st-running,.st-stopping{color:#8a5a00}.st-running{color:#1a56c4}
.st-suspended{color:#5f6368;background:#eceff1}.st-awaiting_approval{color:#6a1b9a;background:#f3e5f5}
.st-unknown,.st-skipped,.st-pending{color:#5f6368}.badge{white-space:nowrap;border-radius:3px;padding:0 .25em}
.swatch{display:inline-block;width:.9em;height:.9em;vertical-align:middle;margin:0 .3em 0 .8em}`

// badge is value with its glyph and colour: <span class="badge st-V">G V</span>.
func badge(value string) template.HTML {
	g, ok := glyphs[value]
	if !ok {
		g = "•"
	}
	v := template.HTMLEscapeString(value)
	return template.HTML(`<span class="badge st-` + v + `" title="` + v + `">` + g + " " + v + `</span>`)
}

// pageFuncs are the pages' template functions.
var pageFuncs = template.FuncMap{"badge": badge}
