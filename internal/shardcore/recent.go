package shardcore

import "slices"

// Remember returns recent with v added at the end, unless recent holds it already;
// when recent holds limit entries, its oldest is dropped first. It keeps a bounded
// memory of the last few regions or coordinator incarnations seen to end, whose late
// messages are to be ignored.
func Remember[T comparable](recent []T, v T, limit int) []T {
	if slices.Contains(recent, v) {
		return recent
	}
	if len(recent) >= limit {
		recent = slices.Delete(recent, 0, len(recent)-limit+1)
	}
	return append(recent, v)
}
