package selector

import (
	"math"
	"math/big"
	"strings"

	"github.com/fuelsync/fuelsync/loader"
)

// FaultTolerance is nailgun's TransactionSerializer.calculate_fault_tolerance: how
// many of the total nodes of a group may fail, from the group's `fault_tolerance`.
//
//   - null or absent → total+1 (an unattainable number: the group never fails);
//   - an integer N ≥ 0 → N, unclamped (N > total is allowed);
//   - a negative integer -N (the number of nodes that must succeed) → max(0, total-N);
//   - a string is trimmed and, ending in "%", "P%" → floor(P*total/100) (Python's //,
//     so a negative percentage rounds down: "-15%" of 10 is -2, giving 8), then the
//     negative rule; P > 100 is not clamped ("200%" of 10 is 20). Any other string is
//     read as a decimal integer ("2", " -1 " → 2, 9 of 10), as Python's int() reads
//     it: surrounding spaces and a sign allowed, nothing else;
//   - a float is truncated toward zero as Python's int() does (2.9 → 2, -1.5 → -1);
//     a boolean counts as 1 or 0, as Python's int(True) does;
//   - anything else (a string that is not a number, "a%", "%", "", "1.5", a list, a
//     mapping, an infinite or NaN float) → total+1, where nailgun logs an error (or,
//     for "", a list, a mapping or an infinity, fails with an exception).
//
// Values beyond the range of int saturate.
func FaultTolerance(v *loader.Value, total int) int {
	garbage := total + 1
	if v.IsNull() {
		return garbage
	}
	switch v.Kind {
	case loader.KindInt:
		return normalize(big.NewInt(v.Int), total)
	case loader.KindBool:
		if v.Bool {
			return 1
		}
		return 0
	case loader.KindFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return garbage
		}
		n, _ := big.NewFloat(math.Trunc(v.Float)).Int(nil)
		return normalize(n, total)
	case loader.KindString:
		s := strings.TrimSpace(v.Text)
		if pct, ok := strings.CutSuffix(s, "%"); ok {
			p, ok := pyInt(pct)
			if !ok {
				return garbage
			}
			// big.Int.Div is Euclidean division: for the positive divisor 100 it
			// rounds down, as Python's // does.
			p.Mul(p, big.NewInt(int64(total)))
			p.Div(p, big.NewInt(100))
			return normalize(p, total)
		}
		n, ok := pyInt(s)
		if !ok {
			return garbage
		}
		return normalize(n, total)
	}
	return garbage
}

// normalize turns a negative value -N into max(0, total-N) and converts the result
// to int, saturating.
func normalize(n *big.Int, total int) int {
	if n.Sign() < 0 {
		n = new(big.Int).Add(n, big.NewInt(int64(total)))
		if n.Sign() < 0 {
			return 0
		}
	}
	if !n.IsInt64() || n.Int64() > math.MaxInt {
		return math.MaxInt
	}
	return int(n.Int64())
}

// pyInt reads s as Python's int(s) does for a decimal string: optional surrounding
// whitespace, an optional sign, then ASCII digits.
func pyInt(s string) (*big.Int, bool) {
	s = strings.TrimSpace(s)
	digits := s
	if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
		digits = digits[1:]
	}
	if digits == "" {
		return nil, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return nil, false
		}
	}
	n, ok := new(big.Int).SetString(s, 10)
	return n, ok
}
