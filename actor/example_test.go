package actor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
)

type add struct{ n int }
type total struct{}

type adder struct{ sum int }

func (a *adder) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case add:
		a.sum += m.n
	case total:
		ctx.Respond(a.sum)
	}
}

func Example() {
	sys, err := actor.New("example", actor.Config{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()

	ref, err := sys.Spawn(actor.PropsOf(func() actor.Actor { return &adder{} }), "adder")
	if err != nil {
		panic(err)
	}
	for i := 1; i <= 4; i++ {
		_ = ref.Tell(add{n: i})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	sum, err := actor.Ask[int](ctx, ref, total{})
	fmt.Println(ref.Path(), sum, err)
	// Output: /user/adder 10 <nil>
}

func ExampleContext_Watch() {
	sys, _ := actor.New("watch", actor.Config{})
	defer func() { _ = sys.Shutdown(context.Background()) }()

	done := make(chan string)
	worker, _ := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "worker")
	_, _ = sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case actor.Started:
			ctx.Watch(worker)
			_ = worker.Tell(actor.PoisonPill{})
		case actor.Terminated:
			done <- m.Ref.Path() + " terminated"
		}
	}), "watcher")
	fmt.Println(<-done)
	// Output: /user/worker terminated
}
