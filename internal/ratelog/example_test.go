package ratelog_test

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/ratelog"
)

// A flood of drops: the first is logged, the next ones within the second are counted,
// and the first after it is logged with that count.
func ExampleLimiter() {
	lim := ratelog.New(time.Second, 1)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for ms := 0; ms <= 1500; ms += 100 {
		if ok, suppressed := lim.Allow(start.Add(time.Duration(ms) * time.Millisecond)); ok {
			fmt.Printf("%dms: dropped a message (%d not logged before)\n", ms, suppressed)
		}
	}
	// Output:
	// 0ms: dropped a message (0 not logged before)
	// 1000ms: dropped a message (9 not logged before)
}
