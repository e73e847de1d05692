//go:build race

package singleton

// raceEnabled reports whether the race detector is on; sync.Pool drops
// items at random under it, which makes allocation counts meaningless.
const raceEnabled = true
