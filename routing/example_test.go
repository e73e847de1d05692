package routing_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/routing"
)

// upper is a job for the workers: its Text in capitals.
type upper struct{ Text string }

// RoutingKey sends jobs with the same text to the same worker.
func (u upper) RoutingKey() string { return u.Text }

func ExampleNewPool() {
	sys, err := actor.New("example", actor.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()

	worker := actor.PropsFunc(func(ctx actor.Context) {
		if job, ok := ctx.Message().(upper); ok {
			_ = ctx.Respond(strings.ToUpper(job.Text))
		}
	})
	ctx := context.Background()
	r, err := routing.NewPool(ctx, sys, routing.PoolConfig{
		Name:   "uppers",
		Routee: worker,
		Size:   4,
		Logic:  routing.ConsistentHashing(routing.ConsistentHashingConfig{}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range []string{"hello", "routers"} {
		reply, err := r.Ask(ctx, upper{Text: w}).Result(ctx)
		fmt.Println(reply, err)
	}
	routees, _ := actor.Ask[routing.Routees](ctx, r.Ref(), routing.GetRoutees{})
	fmt.Println(len(routees.Refs), "routees under", r.Ref().Path())

	// A message with no key cannot be routed by consistent hashing.
	fmt.Println(r.Tell("no key"))
	// Output:
	// HELLO <nil>
	// ROUTERS <nil>
	// 4 routees under /user/uppers
	// routing: no consistent-hashing key for the message
}
