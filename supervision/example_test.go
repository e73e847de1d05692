package supervision_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/supervision"
)

var errBadInput = errors.New("bad input")

// A parent that resumes children on bad input, and otherwise restarts them at most
// twice a minute before stopping them.
func ExampleOneForOne() {
	strategy := supervision.OneForOne{
		MaxRetries: 2,
		Within:     time.Minute,
		Decider: func(reason error) supervision.Directive {
			if errors.Is(reason, errBadInput) {
				return supervision.Resume
			}
			return supervision.Restart
		},
	}

	var stats supervision.RetryStats // one per child, kept by the parent
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	failures := []error{
		errBadInput,
		supervision.NewPanicError("index out of range", nil),
		errors.New("connection reset"),
		errors.New("connection reset"),
	}
	for _, reason := range failures {
		d := strategy.Decide(&stats, reason, now)
		fmt.Printf("%-26s -> %v\n", reason, d.Directive)
		now = now.Add(time.Second)
	}
	// Output:
	// bad input                  -> resume
	// panic: index out of range  -> restart
	// connection reset           -> restart
	// connection reset           -> stop
}

func ExampleBackoff_Delay() {
	b := supervision.Backoff{Min: 5 * time.Second, Max: time.Minute}
	for n := range 6 {
		fmt.Println(n, b.Delay(n, 0))
	}
	// Output:
	// 0 5s
	// 1 10s
	// 2 20s
	// 3 40s
	// 4 1m0s
	// 5 1m0s
}
