package phi_test

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/phi"
)

// A peer answers every second, then stops: the detector suspects it once the silence
// passes the mean interval, the acceptable pause and a few deviations.
func Example() {
	d := phi.New(phi.Config{AcceptablePause: 3 * time.Second, MinStdDeviation: 100 * time.Millisecond, MaxSamples: 100})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := start
	for range 10 {
		d.Heartbeat(at, time.Second)
		at = at.Add(time.Second)
	}
	last := at.Add(-time.Second)
	for _, silence := range []time.Duration{time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second} {
		fmt.Printf("after %v: suspected %v\n", silence, !d.Available(last.Add(silence), 8))
	}
	fmt.Println("suspected from:", d.Crossing(phi.Deviations(8)).Sub(last).Round(100*time.Millisecond))
	// Output:
	// after 1s: suspected false
	// after 3s: suspected false
	// after 4s: suspected false
	// after 5s: suspected true
	// suspected from: 4.6s
}
