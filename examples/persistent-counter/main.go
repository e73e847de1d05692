// Command persistent-counter is the seed's event-sourced Counter: it increments,
// decrements and reads a counter whose events live in an embedded badger journal in a
// local folder, and it passivates the counter when it has been idle. Run it twice: the
// second run starts from the count the first one left.
//
//	go run ./examples/persistent-counter            # +1, then prints the count
//	go run ./examples/persistent-counter -inc 5 -dec 2
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/serialization"
)

// Events: what is stored. Exported fields, registered under stable names.
type (
	Incremented struct{ By int }
	Decremented struct{ By int }
)

// Commands.
type (
	increment struct{}
	decrement struct{}
	get       struct{}
)

// counter is the entity. It passivates (stops) after idle; the next command starts it
// again, and it recovers its count from the journal.
type counter struct {
	id    string
	count int
	idle  time.Duration
}

func (c *counter) PersistenceID() string { return "Counter-" + c.id }

func (c *counter) apply(ev any) {
	switch e := ev.(type) {
	case Incremented:
		c.count += e.By
	case Decremented:
		c.count -= e.By
	}
}

func (c *counter) Recover(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case persistence.RecoveryCompleted:
		fmt.Printf("%s recovered: count %d after %d events\n", c.PersistenceID(), c.count, m.HighestSequenceNr)
		ctx.SetReceiveTimeout(c.idle)
	default:
		c.apply(m)
	}
}

// Receive answers every command: from the persist handler once the event is stored, or
// with the error Persist returns (an event type not registered: nothing written). If
// the journal rejects or fails the write, the persistence runtime answers with the
// error. Either way the caller's Ask fails at once rather than at its deadline.
func (c *counter) Receive(ctx persistence.Context) {
	var err error
	switch ctx.Message().(type) {
	case increment:
		err = persistence.Persist(ctx, Incremented{By: 1}, func(ev Incremented) {
			c.apply(ev)
			ctx.Respond(c.count)
		})
	case decrement:
		err = persistence.Persist(ctx, Decremented{By: 1}, func(ev Decremented) {
			c.apply(ev)
			ctx.Respond(c.count)
		})
	case get:
		ctx.Respond(c.count)
	case actor.ReceiveTimeout:
		fmt.Printf("%s idle for %v: passivating\n", c.PersistenceID(), c.idle)
		ctx.Stop(ctx.Self())
	}
	if err != nil {
		ctx.Respond(actor.Failure{Err: err}) // the caller's Ask fails with err
	}
}

func main() {
	dir := flag.String("dir", filepath.Join("troupe-data", "persistent-counter"), "journal folder")
	id := flag.String("id", "1", "counter id")
	inc := flag.Int("inc", 1, "increments to make")
	dec := flag.Int("dec", 0, "decrements to make")
	idle := flag.Duration("idle", 200*time.Millisecond, "passivate the counter after this long without commands")
	flag.Parse()
	if err := run(*dir, *id, *inc, *dec, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "persistent-counter:", err)
		os.Exit(1)
	}
}

func run(dir, id string, inc, dec int, idle time.Duration) error {
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if errors.Is(err, badgerjournal.ErrLocked) {
		return fmt.Errorf("another process is using %s: %w", dir, err)
	}
	if err != nil {
		return err
	}

	reg := serialization.NewRegistry()
	if err := errors.Join(
		serialization.Register[Incremented](reg, "counter.Incremented"),
		serialization.Register[Decremented](reg, "counter.Decremented"),
	); err != nil {
		return err
	}
	sys, err := actor.New("counter", actor.Config{})
	if err != nil {
		_ = store.Close()
		return err
	}
	// The system closes the store once its actors have stopped.
	defer func() { _ = sys.Shutdown(context.Background()) }()
	cfg := persistence.Config{Journal: store, Snapshots: store, Registry: reg, CloseOnShutdown: true}
	if _, err := persistence.Start(sys, cfg); err != nil {
		_ = store.Close()
		return err
	}

	props := persistence.Props(func() persistence.Entity { return &counter{id: id, idle: idle} })
	ref, err := sys.Spawn(props, "counter-"+id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ask := func(cmd any) (int, error) { return actor.Ask[int](ctx, ref, cmd) }
	for range inc {
		if _, err := ask(increment{}); err != nil {
			return err
		}
	}
	for range dec {
		if _, err := ask(decrement{}); err != nil {
			return err
		}
	}
	n, err := ask(get{})
	if err != nil {
		return err
	}
	fmt.Printf("count is %d (+%d -%d this run)\n", n, inc, dec)

	// Wait for passivation, then start the counter again: it recovers the same count.
	done := make(chan struct{})
	if _, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch ctx.Message().(type) {
		case actor.Started:
			ctx.Watch(ref)
		case actor.Terminated:
			close(done)
		}
	}), "watcher"); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(idle + 5*time.Second):
		return errors.New("the counter did not passivate")
	}
	ref, err = sys.Spawn(props, "counter-"+id+"-again")
	if err != nil {
		return err
	}
	if n2, err := ask(get{}); err != nil || n2 != n {
		return fmt.Errorf("after passivation the count is %d (%v), want %d", n2, err, n)
	}
	stop, cancelStop := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelStop()
	return sys.Shutdown(stop)
}
