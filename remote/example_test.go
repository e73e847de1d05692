package remote_test

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
)

// Greet is a message that crosses the wire: it is registered under a stable name.
type Greet struct{ Who string }

// Greeting is the reply.
type Greeting struct{ Text string }

func Example() {
	reg := serialization.NewRegistry()
	_ = serialization.Register[*Greet](reg, "example.Greet")
	_ = serialization.Register[*Greeting](reg, "example.Greeting")

	start := func(name string) *actor.System {
		sys, _ := actor.New(name, actor.Config{})
		if _, err := remote.Start(sys, remote.Config{Registry: reg}); err != nil {
			fmt.Println(err)
		}
		return sys
	}
	server, client := start("server"), start("client")
	defer client.Shutdown(context.Background())
	defer server.Shutdown(context.Background())

	greeter, _ := server.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if g, ok := ctx.Message().(*Greet); ok {
			ctx.Respond(&Greeting{Text: "hello, " + g.Who})
		}
	}), "greeter")

	// The client resolves the greeter by its full path and asks it across the wire.
	ref, _ := client.Resolve(greeter.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	reply, err := actor.Ask[*Greeting](ctx, ref, &Greet{Who: "Ada"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reply.Text, ref.IsLocal())
	// Output: hello, Ada false
}

// Remote.Send waits for room in a full outbound queue until its context ends, where
// Tell would fail at once with ErrOverloaded.
func ExampleRemote_Send() {
	reg := serialization.NewRegistry()
	_ = serialization.Register[*Greet](reg, "example.Greet")
	start := func(name string) (*actor.System, *remote.Remote) {
		sys, _ := actor.New(name, actor.Config{})
		r, err := remote.Start(sys, remote.Config{Registry: reg})
		if err != nil {
			fmt.Println(err)
		}
		return sys, r
	}
	server, _ := start("server")
	client, r := start("client")
	defer client.Shutdown(context.Background())
	defer server.Shutdown(context.Background())

	got := make(chan string, 1)
	greeter, _ := server.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if g, ok := ctx.Message().(*Greet); ok {
			got <- g.Who
		}
	}), "greeter")
	ref, _ := client.Resolve(greeter.URI())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := r.Send(ctx, ref, &Greet{Who: "Grace"}, actor.Ref{}); err != nil {
		fmt.Println(err) // not sent: the queue stayed full until the deadline
		return
	}
	fmt.Println(<-got)
	// Output: Grace
}
