package shardcore

import (
	"slices"
	"testing"
)

// Remember keeps each value once, in the order first seen, and the last few only.
func TestRememberKeepsTheLastFewOnce(t *testing.T) {
	var recent []string
	for _, v := range []string{"a", "b", "a", "c", "d", "b"} {
		recent = Remember(recent, v, 3)
	}
	if want := []string{"b", "c", "d"}; !slices.Equal(recent, want) {
		t.Fatalf("remembered %v, want %v", recent, want)
	}
	if got := Remember([]string{"a", "b", "c", "d"}, "e", 2); !slices.Equal(got, []string{"d", "e"}) {
		t.Fatalf("over the limit already: %v, want [d e]", got)
	}
}
