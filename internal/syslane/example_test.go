package syslane_test

import (
	"fmt"
	"time"

	"github.com/troupe-go/troupe/internal/syslane"
)

func Example() {
	now := time.Now()
	s := syslane.NewSender[string](syslane.Config{Capacity: 100, ResendAfter: time.Second})
	var r syslane.Receiver
	s.Send("watch a")
	s.Send("watch b")
	batch := s.Next(now, nil)
	r.Receive(batch[0].Seq) // the connection breaks before the second arrives
	s.Disconnected()
	for _, m := range s.Next(now, nil) {
		fmt.Println(m.Seq, m.Msg, r.Receive(m.Seq) == syslane.Apply)
	}
	s.Ack(r.Acked(), now)
	fmt.Println("unacknowledged:", s.Unacked())
	// Output:
	// 1 watch a false
	// 2 watch b true
	// unacknowledged: 0
}
