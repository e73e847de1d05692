package wirebatch

import "testing"

func TestPosition(t *testing.T) {
	table := []string{"a", "b", "a"}
	for _, c := range []struct {
		last int
		v    string
		want int
	}{
		{2, "a", 2}, // the last one first
		{1, "a", 0}, // else the first in order
		{0, "b", 1},
		{0, "c", -1},
		{5, "b", 1}, // a last out of range is not looked at
	} {
		if got := Position(table, c.last, c.v); got != c.want {
			t.Errorf("Position(%v, %d, %q) = %d, want %d", table, c.last, c.v, got, c.want)
		}
	}
	if got := Position[string](nil, 0, "a"); got != -1 {
		t.Errorf("Position in an empty table = %d", got)
	}
}
