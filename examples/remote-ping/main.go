// Command remote-ping runs ping-pong between two actor systems in two processes over
// Troupe's remote transport and prints the rates.
//
//	go run ./examples/remote-ping
//
// starts the pong process itself (this program again, with -role pong) and pings it.
// To run the two sides yourself, on one machine or two:
//
//	go run ./examples/remote-ping -role pong -listen 127.0.0.1:25520   # until Ctrl-C
//	go run ./examples/remote-ping -role ping -peer 127.0.0.1:25520
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/remote"
	"github.com/troupe-go/troupe/serialization"
)

// Ping and Pong cross the wire; both sides register them under the same names.
type Ping struct {
	Seq  int64
	Body []byte
}

// Pong answers a Ping.
type Pong struct{ Seq int64 }

// Burst asks the pong side to answer only every Every-th Ping of a stream.
type Burst struct{ Every int64 }

func registry() *serialization.Registry {
	reg := serialization.NewRegistry()
	_ = serialization.Register[*Ping](reg, "remoteping.Ping")
	_ = serialization.Register[*Pong](reg, "remoteping.Pong")
	_ = serialization.Register[*Burst](reg, "remoteping.Burst")
	return reg
}

func main() {
	role := flag.String("role", "", "pong or ping; empty runs both, pong in a child process")
	listen := flag.String("listen", "127.0.0.1:0", "pong: host:port to listen on")
	peer := flag.String("peer", "", "ping: host:port of the pong process")
	rounds := flag.Int("rounds", 20_000, "ping: sequential round trips")
	stream := flag.Int("stream", 1_000_000, "ping: messages in the one-way stream")
	child := flag.Bool("child", false, "pong: run as the child of a ping process, until standard input closes")
	flag.Parse()
	var err error
	switch *role {
	case "pong":
		err = runPong(*listen, *child)
	case "ping":
		err = runPing(*peer, *rounds, *stream)
	case "":
		err = runBoth(*rounds, *stream)
	default:
		err = fmt.Errorf("unknown role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "remote-ping:", err)
		os.Exit(1)
	}
}

func startSystem(name, listen string) (*actor.System, *remote.Remote, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, nil, err
	}
	sys, err := actor.New(name, actor.Config{})
	if err != nil {
		return nil, nil, err
	}
	// The stream keeps up to 60,000 messages in flight, about as much as the default
	// outbound queue holds: with backpressure a full queue makes the sender wait
	// instead of failing the send.
	r, err := remote.Start(sys, remote.Config{ListenHost: host, ListenPort: port, Registry: registry(),
		BackpressureTimeout: 10 * time.Second})
	if err != nil {
		return nil, nil, err
	}
	return sys, r, nil
}

// runPong answers pings until it is interrupted (SIGINT or SIGTERM), or, as the
// child of a ping process, until its standard input closes.
func runPong(listen string, child bool) error {
	sys, r, err := startSystem("pong", listen)
	if err != nil {
		return err
	}
	every := int64(1)
	_, err = sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case *Burst:
			every = m.Every
			ctx.Respond(&Pong{})
		case *Ping:
			if m.Seq%every == 0 {
				ctx.Respond(&Pong{Seq: m.Seq})
			}
		}
	}), "pong")
	if err != nil {
		return err
	}
	fmt.Println(r.Address().HostPort()) // the parent reads this line
	if !child {
		sys.ShutdownOnSignal() // SIGTERM or Ctrl-C: flush what is queued and stop
		<-sys.Terminated()
		return sys.Shutdown(context.Background()) // the outcome of the shutdown it ran
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return sys.Shutdown(context.Background())
}

func runBoth(rounds, stream int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(exe, "-role", "pong", "-child")
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	defer func() {
		_ = stdin.Close()
		_ = child.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("pong process: %w", err)
	}
	fmt.Printf("pong process %d listens on %s\n", child.Process.Pid, strings.TrimSpace(line))
	return runPing(strings.TrimSpace(line), rounds, stream)
}

// runPing measures sequential round trips, then a one-way stream.
func runPing(peer string, rounds, stream int) error {
	if peer == "" {
		return errors.New("-peer is required with -role ping")
	}
	sys, _, err := startSystem("ping", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer sys.Shutdown(context.Background())
	pong, err := sys.Resolve("troupe://pong@" + peer + "/user/pong")
	if err != nil {
		return err
	}
	msg := &Ping{Body: make([]byte, 100)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := actor.Ask[*Pong](ctx, pong, msg); err != nil {
		return fmt.Errorf("first ping: %w", err)
	}

	start := time.Now()
	for i := range rounds {
		msg.Seq = int64(i)
		if _, err := actor.Ask[*Pong](ctx, pong, msg); err != nil {
			return err
		}
	}
	took := time.Since(start)
	fmt.Printf("round trips: %d in %v, %.1f µs each\n", rounds, took.Round(time.Millisecond), float64(took.Microseconds())/float64(rounds))

	// The stream: pong answers every 10,000th message; at most 60,000 are in flight.
	const every, window = 10_000, 60_000
	if _, err := actor.Ask[*Pong](ctx, pong, &Burst{Every: every}); err != nil {
		return err
	}
	acks := make(chan int64, 256)
	acker, err := sys.Spawn(actor.PropsFunc(func(ctx actor.Context) {
		if p, ok := ctx.Message().(*Pong); ok {
			acks <- p.Seq
		}
	}), "acker")
	if err != nil {
		return err
	}
	total := int64(stream / every * every)
	start = time.Now()
	var have int64
	for i := int64(1); i <= total; i++ {
		for i-have > window {
			select {
			case have = <-acks:
			case <-time.After(10 * time.Second):
				return errors.New("stream stalled")
			}
		}
		msg.Seq = i
		if err := pong.Send(msg, acker); err != nil {
			return fmt.Errorf("stream message %d: %w", i, err)
		}
	}
	for have < total {
		select {
		case have = <-acks:
		case <-time.After(10 * time.Second):
			return errors.New("stream stalled")
		}
	}
	took = time.Since(start)
	fmt.Printf("stream: %d messages of 100 bytes in %v, %.0f msg/s\n", total, took.Round(time.Millisecond), float64(total)/took.Seconds())
	return nil
}
