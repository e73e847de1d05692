// Command ddata runs three Troupe nodes as separate processes on loopback that keep
// a shared shopping cart (an ORSet, stored on disk) and a page-hit counter (a
// GCounter) with package ddata, and shows them converge after a node is killed and
// restarted.
//
//	go run ./examples/ddata
//
// starts the nodes (this program again, with -node), has each change the values
// (adds to the cart with WriteMajority, hits with WriteLocal), waits until every node
// shows the same values, kills one node with SIGKILL, changes the values on the two
// others, restarts the killed node on the same addresses (it loads its cart from
// disk first, then catches up by gossip), changes the values once more and waits
// until all three agree again. It takes a few seconds after the build.
//
// To run nodes by hand, one per terminal (type "add apples", "remove apples" or
// "hit 3" into any of them):
//
//	go run ./examples/ddata -node -remote-port 25520 -gossip-port 7946 -dir /tmp/n0
//	go run ./examples/ddata -node -remote-port 25521 -gossip-port 7947 -dir /tmp/n1 -seed 127.0.0.1:7946
//	go run ./examples/ddata -node -remote-port 25522 -gossip-port 7948 -dir /tmp/n2 -seed 127.0.0.1:7946
//
// Every line a node prints starts with its address in brackets. The first names its
// remote address, incarnation uid and gossip address; then come "members N" (Up
// members it sees), "cart [...]" and "hits N" whenever a value changes, and "ok ..."
// or "error ..." for each command.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// options are the command-line flags.
type options struct {
	node       bool
	host       string
	remotePort int
	gossipPort int
	seeds      []string
	dir        string
	logLevel   string
}

func main() {
	var o options
	flag.BoolVar(&o.node, "node", false, "run one node; without it, run the demo, which starts three nodes as child processes")
	flag.StringVar(&o.host, "host", "127.0.0.1", "node: host to listen and gossip on")
	flag.IntVar(&o.remotePort, "remote-port", 0, "node: remote transport port (0: a free port)")
	flag.IntVar(&o.gossipPort, "gossip-port", 0, "node: serf gossip port (0: a free port)")
	flag.Func("seed", "node: gossip address (host:port) of a seed node; repeat or separate with commas", func(s string) error {
		for _, seed := range strings.Split(s, ",") {
			if seed = strings.TrimSpace(seed); seed != "" {
				o.seeds = append(o.seeds, seed)
			}
		}
		return nil
	})
	flag.StringVar(&o.dir, "dir", "", "node: directory of the durable store (required with -node)")
	flag.StringVar(&o.logLevel, "log", "off", "log to stderr at this level: off, error, warn, info or debug")
	flag.Parse()

	var err error
	if o.node {
		err = runNode(o)
	} else {
		err = runDemo(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ddata:", err)
		os.Exit(1)
	}
}
