package controller

import (
	"fmt"
	"slices"
)

// MaxProblems is how many problems of one reconcile the log, the status
// (/api/v1/status) and the status page show; the rest are counted. A commit
// of 60,000 empty cluster specs logged 60,000 lines for one reconcile and made
// a status document of 5.3 MB.
const MaxProblems = 100

// capProblems returns the first MaxProblems of problems (a copy: the rest is
// not kept) and how many it left out.
func capProblems(problems []string) (shown []string, more int) {
	if len(problems) <= MaxProblems {
		return problems, 0
	}
	return slices.Clone(problems[:MaxProblems]), len(problems) - MaxProblems
}

// MoreProblems says how many problems are not shown: "and 59900 more problems
// (60000 in all)"; "" when none is left out.
func MoreProblems(more int) string {
	if more <= 0 {
		return ""
	}
	word := "problems"
	if more == 1 {
		word = "problem"
	}
	return fmt.Sprintf("and %d more %s (%d in all)", more, word, more+MaxProblems)
}
