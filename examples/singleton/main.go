// Command singleton runs a cluster singleton on three node processes on loopback and
// shows it move:
//
//	go run ./examples/singleton
//
// Each node (this program again, with -node) starts the same singleton manager, for a
// singleton that counts ticks, and a proxy through which it asks the singleton for its
// count four times a second; it prints where the answer came from whenever that
// changes. The demo waits until every node's proxy reaches the singleton on the
// oldest node, then kills that node with SIGKILL: the others see it unreachable, the
// split-brain resolver downs and removes it after stable-after, and once the
// down-removal margin has passed the next oldest starts the singleton. Then the demo
// stops that node with SIGTERM: it hands the singleton over to the last node before it
// leaves the cluster, which takes milliseconds. It takes about ten seconds after the
// build.
//
// To run nodes by hand, one per terminal (Ctrl-C leaves gracefully, kill -9 crashes):
//
//	go run ./examples/singleton -node -remote-port 25520 -gossip-port 7946
//	go run ./examples/singleton -node -remote-port 25521 -gossip-port 7947 -seed 127.0.0.1:7946
//	go run ./examples/singleton -node -remote-port 25522 -gossip-port 7948 -seed 127.0.0.1:7946
//
// Every line a node prints starts with its address in brackets; the demo's own lines
// start with "---".
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// options are the command-line flags.
type options struct {
	node        bool
	remotePort  int
	gossipPort  int
	seed        string
	stableAfter time.Duration
	logLevel    string
}

func main() {
	var o options
	flag.BoolVar(&o.node, "node", false, "run one node; without it, run the demo, which starts three nodes as child processes")
	flag.IntVar(&o.remotePort, "remote-port", 0, "node: remote transport port (0: a free port)")
	flag.IntVar(&o.gossipPort, "gossip-port", 0, "node: serf gossip port (0: a free port)")
	flag.StringVar(&o.seed, "seed", "", "node: gossip address (host:port) of a running node to join; none: form a new cluster")
	flag.DurationVar(&o.stableAfter, "stable-after", 2*time.Second, "split-brain resolver stable-after (also the down-removal margin)")
	flag.StringVar(&o.logLevel, "log", "off", "log to stderr at this level: off, error, warn, info or debug")
	flag.Parse()

	var err error
	if o.node {
		err = runNode(o)
	} else {
		err = runDemo(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "singleton:", err)
		os.Exit(1)
	}
}
