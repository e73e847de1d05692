//go:build !race

package mailbox

const raceEnabled = false
