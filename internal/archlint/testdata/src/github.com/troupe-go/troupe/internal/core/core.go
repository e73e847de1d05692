package core

import (
	"math/rand"
	"net" // want `a core does not import net`
	"time"
)

var _ net.Addr

// Step decides.
func Step(now time.Time, r *rand.Rand) time.Duration {
	go func() {}()        // want `a core starts no goroutine`
	_ = time.Now()        // want `a core reads no clock \(time.Now\)`
	t := time.NewTimer(0) // want `a core reads no clock \(time.NewTimer\)`
	t.Stop()
	_ = rand.Intn(3) // want `a core draws no unseeded random number \(rand.Intn\)`
	_ = r.Intn(3)
	_ = rand.New(rand.NewSource(1))
	return now.Sub(now) + time.Second
}
