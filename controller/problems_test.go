package controller

import (
	"fmt"
	"strings"
	"testing"
)

func TestCapProblems(t *testing.T) {
	for _, n := range []int{0, 1, MaxProblems, MaxProblems + 1, 3 * MaxProblems} {
		problems := make([]string, n)
		for i := range problems {
			problems[i] = fmt.Sprint(i)
		}
		shown, more := capProblems(problems)
		if len(shown) != min(n, MaxProblems) || more != n-len(shown) || (n > 0 && shown[0] != "0") {
			t.Errorf("%d problems: %d shown, %d more", n, len(shown), more)
		}
		if want := map[bool]string{true: "", false: fmt.Sprintf("and %d more problem", more)}[more == 0]; !strings.HasPrefix(MoreProblems(more), want) || (more == 0) != (MoreProblems(more) == "") {
			t.Errorf("%d more: %q", more, MoreProblems(more))
		}
	}
}
