package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/troupe-go/troupe/actor"
)

// wireMsg is the remote scenarios' message: 100 bytes of body and a sequence number.
type wireMsg struct {
	Seq  int64
	Body []byte
}

// wireAck tells the sender how many messages the receiver has.
type wireAck struct{ N int64 }

// remotePair starts two systems with remoting on 127.0.0.1 in this process.
func remotePair() (a, b *actor.System, err error) {
	if a, _, err = startWireSystem("sender"); err != nil {
		return nil, nil, err
	}
	if b, _, err = startWireSystem("receiver"); err != nil {
		shutdown(a)
		return nil, nil, err
	}
	return a, b, nil
}

// runRemoteTell sends n 100-byte messages from one sender to one actor in another
// system and times until the receiver has them all. The receiver acknowledges every
// ackEvery messages, and the sender keeps at most window unacknowledged; should the
// outbound queue fill, the sender waits for room (backpressure).
func runRemoteTell(n int) (result, error) {
	const ackEvery, window = 10_000, 60_000
	a, b, err := remotePair()
	if err != nil {
		return nil, err
	}
	defer shutdown(a)
	defer shutdown(b)

	acked := make(chan int64, 1024)
	acker, err := a.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*wireAck); ok {
			acked <- m.N
		}
	}), "acker")
	if err != nil {
		return nil, err
	}
	var count int64
	sink, err := b.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*wireMsg); ok {
			count++
			if count%ackEvery == 0 || count == int64(n) {
				ctx.Respond(&wireAck{N: count})
			}
		}
	}), "sink")
	if err != nil {
		return nil, err
	}
	target, err := a.Resolve(sink.URI())
	if err != nil {
		return nil, err
	}
	msg := &wireMsg{Body: make([]byte, 100)}
	// Warm up the connection and the dictionaries.
	if err := target.Send(msg, acker); err != nil {
		return nil, err
	}
	count = -1 // the warm-up message is not counted; set before any other message
	if err := waitAck(acked, 0); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	cpu0 := processCPU()
	res, err := measure(n, func() error {
		var have int64
		for i := int64(1); i <= int64(n); i++ {
			for i-have > window {
				var err error
				if have, err = next(acked); err != nil {
					return err
				}
			}
			msg.Seq = i
			if err := target.Send(msg, acker); err != nil {
				return err
			}
		}
		for have < int64(n) {
			var err error
			if have, err = next(acked); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res["cpu_ns_per_op"] = round(float64(processCPU()-cpu0)/float64(n), 0)
	return res, nil
}

func next(acked chan int64) (int64, error) {
	select {
	case n := <-acked:
		return n, nil
	case <-time.After(10 * time.Second):
		return 0, fmt.Errorf("no progress for 10s")
	}
}

func waitAck(acked chan int64, want int64) error {
	for {
		n, err := next(acked)
		if err != nil || n >= want {
			return err
		}
	}
}

// runRemoteAsk makes n sequential asks to an actor in another system.
func runRemoteAsk(n int) (result, error) {
	a, b, err := remotePair()
	if err != nil {
		return nil, err
	}
	defer shutdown(a)
	defer shutdown(b)
	echo, err := b.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if m, ok := ctx.Message().(*wireMsg); ok {
			ctx.Respond(m)
		}
	}), "echo")
	if err != nil {
		return nil, err
	}
	target, err := a.Resolve(echo.URI())
	if err != nil {
		return nil, err
	}
	msg := &wireMsg{Body: make([]byte, 100)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := actor.Ask[*wireMsg](ctx, target, msg); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	lat := make([]time.Duration, n)
	cpu0 := processCPU()
	res, err := measure(n, func() error {
		for i := range n {
			t0 := time.Now()
			if _, err := actor.Ask[*wireMsg](ctx, target, msg); err != nil {
				return err
			}
			lat[i] = time.Since(t0)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res["cpu_ns_per_op"] = round(float64(processCPU()-cpu0)/float64(n), 0)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res["p50_us"] = round(float64(lat[n/2].Nanoseconds())/1e3, 1)
	res["p99_us"] = round(float64(lat[n*99/100].Nanoseconds())/1e3, 1)
	return res, nil
}
