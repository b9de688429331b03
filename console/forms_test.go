package console

import "testing"

// A page number or offset from a URL is never negative and never large enough to overflow
// page*size; malformed is 0.
func TestQueryNumberBounds(t *testing.T) {
	for raw, want := range map[string]int{"": 0, "x": 0, "-5": 0, "7": 7, "9223372036854775807": maxQueryNumber,
		"99999999999999999999": 0, "1000001": maxQueryNumber} {
		if got := queryNumber(raw); got != want {
			t.Errorf("queryNumber(%q) = %d, want %d", raw, got, want)
		}
	}
}
