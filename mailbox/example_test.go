package mailbox_test

import (
	"fmt"
	"sync"

	"github.com/troupe-go/troupe/mailbox"
)

// A Queue's zero value is ready: any goroutine may push, and one consumer pops.
func ExampleQueue() {
	var q mailbox.Queue[string]

	var wg sync.WaitGroup
	for _, word := range []string{"a", "b", "c"} {
		wg.Go(func() { q.Push(word) })
	}
	wg.Wait()

	n := 0
	for !q.Empty() {
		if _, ok := q.Pop(); ok {
			n++
		}
	}
	q.Shrink() // the consumer is idle: give back any grown memory
	fmt.Println(n, "messages")
	// Output: 3 messages
}

// With DropOldest a full Bounded mailbox makes room for the newest element and hands
// back the oldest, which an actor runtime would send to dead letters.
func ExampleNewBounded() {
	box, err := mailbox.NewBounded[string](2, mailbox.DropOldest)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range []string{"first", "second", "third"} {
		dropped, r := box.Offer(m)
		if r == mailbox.Accepted {
			fmt.Println(m, r)
		} else {
			fmt.Println(m, r, dropped)
		}
	}
	for v, ok := box.Pop(); ok; v, ok = box.Pop() {
		fmt.Println("pop", v)
	}
	// Output:
	// first Accepted
	// second Accepted
	// third DroppedOldest first
	// pop second
	// pop third
}

// A Priority mailbox pops urgent messages first and keeps arrival order among equals.
func ExampleNewPriority() {
	type msg struct {
		urgent bool
		text   string
	}
	box, err := mailbox.NewPriority(func(m msg) int {
		if m.urgent {
			return 1
		}
		return 0
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	box.Offer(msg{false, "tick 1"})
	box.Offer(msg{true, "stop"})
	box.Offer(msg{false, "tick 2"})
	for m, ok := box.Pop(); ok; m, ok = box.Pop() {
		fmt.Println(m.text)
	}
	// Output:
	// stop
	// tick 1
	// tick 2
}

// NewBounded refuses a configuration it cannot honour with an error that wraps
// ErrInvalidConfig.
func ExampleErrInvalidConfig() {
	_, err := mailbox.NewBounded[int](0, mailbox.Reject)
	fmt.Println(err)
	// Output: mailbox: invalid config: bounded capacity 0, want at least 1
}
