//go:build race

package mailbox

// raceEnabled: sync.Pool drops items at random under the race detector.
const raceEnabled = true
