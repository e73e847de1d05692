// Command hello is Troupe's first demo: a supervised counter that crashes and comes back,
// asks, death watch and a graceful shutdown, in one process.
//
//	go run ./examples/hello
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/supervision"
)

// Messages of the counter.
type (
	increment struct{ by int }
	get       struct{}
	crash     struct{}
	whereIs   struct{}
)

// counter counts; it forgets its count when it is restarted after a crash.
type counter struct{ n int }

func (c *counter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		fmt.Printf("%s started\n", ctx.Self().Path())
	case increment:
		c.n += m.by
	case get:
		ctx.Respond(c.n)
	case crash:
		panic("something went wrong")
	case actor.Restarting:
		fmt.Printf("counter restarting after: %v\n", m.Reason)
	case actor.Stopped:
		fmt.Println("counter stopped")
	}
}

// watcher reports the death of what it watches.
type watcher struct{ done chan struct{} }

func (w *watcher) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Ref:
		ctx.Watch(m)
		ctx.Respond(true)
	case actor.Terminated:
		fmt.Printf("watcher: %s terminated\n", m.Ref.Path())
		close(w.done)
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run() error {
	sys, err := actor.New("hello", actor.Config{})
	if err != nil {
		return err
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()

	// A parent whose strategy restarts a crashing child at most 3 times a minute.
	parent := &actor.Props{
		Strategy: supervision.OneForOne{MaxRetries: 3, Within: time.Minute},
		Producer: func() actor.Actor {
			return actor.ReceiveFunc(func(ctx actor.Context) {
				switch ctx.Message().(type) {
				case actor.Started:
					if _, err := ctx.Spawn(actor.PropsOf(func() actor.Actor { return &counter{} }), "counter"); err != nil {
						ctx.Logger().Error(err.Error())
					}
				case whereIs:
					if c, ok := ctx.Child("counter"); ok {
						ctx.Respond(c)
					}
				}
			})
		},
	}
	p, err := sys.Spawn(parent, "parent")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctr, err := actor.Ask[actor.Ref](ctx, p, whereIs{})
	if err != nil {
		return err
	}

	for i := 1; i <= 10; i++ {
		_ = ctr.Tell(increment{by: i})
	}
	n, err := actor.Ask[int](ctx, ctr, get{})
	if err != nil {
		return err
	}
	fmt.Println("count after ten increments:", n)

	_ = ctr.Tell(crash{})
	n, err = actor.Ask[int](ctx, ctr, get{})
	if err != nil {
		return err
	}
	fmt.Println("count after the crash and restart:", n)

	done := make(chan struct{})
	w, err := sys.Spawn(actor.PropsOf(func() actor.Actor { return &watcher{done: done} }), "watcher")
	if err != nil {
		return err
	}
	if _, err := actor.Ask[bool](ctx, w, ctr); err != nil {
		return err
	}
	_ = ctr.Tell(actor.PoisonPill{})
	<-done

	if err := sys.Shutdown(ctx); err != nil {
		return err
	}
	fmt.Println("system shut down")
	return nil
}
