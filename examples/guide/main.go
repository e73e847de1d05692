// Command guide is the program docs/guide.md builds step by step: a small bank in which
// accounts are sharded, persistent entities, a cluster singleton hands out account
// numbers, and distributed data counts the transactions of the whole cluster.
//
//	go run ./examples/guide
//
// runs the demo: three nodes in this process on an embedded badger journal (a
// temporary folder); it opens accounts, moves money, makes the oldest node leave (its
// shards move, the singleton hands over), checks every balance, and exits.
//
// With -postgres and -node, the program is one node of a real deployment: it shares a
// PostgreSQL journal with the other nodes, serves a small HTTP API (-http) and the
// management API and page (-management), and leaves the cluster gracefully on SIGTERM:
//
//	go run ./examples/guide -postgres postgres://localhost/bank -node bank-1 \
//	    -gossip-port 7946 -seeds 127.0.0.1:7946,127.0.0.1:7947 -http :8081 -management 127.0.0.1:8558
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"
)

type flags struct {
	verbose    bool
	postgres   string
	node       string
	host       string
	remotePort int
	gossipPort int
	seeds      string
	minMembers int
	http       string
	management string
}

func main() {
	var f flags
	flag.BoolVar(&f.verbose, "v", false, "log the runtime's warnings and errors")
	flag.StringVar(&f.postgres, "postgres", "", "PostgreSQL connection string of the journal every node shares (with -node)")
	flag.StringVar(&f.node, "node", "", "run one node of this name (with -postgres) instead of the demo")
	flag.StringVar(&f.host, "host", "", "the address other nodes reach this one at (default 127.0.0.1)")
	flag.IntVar(&f.remotePort, "remote-port", 0, "remote port (0: any free port)")
	flag.IntVar(&f.gossipPort, "gossip-port", 0, "gossip port (0: any free port)")
	flag.StringVar(&f.seeds, "seeds", "", "comma-separated gossip addresses to join through, the same list on every node")
	flag.IntVar(&f.minMembers, "min-members", 3, "members that must have joined before any is Up")
	flag.StringVar(&f.http, "http", "127.0.0.1:8080", "address of the bank's HTTP API")
	flag.StringVar(&f.management, "management", "127.0.0.1:8558", "address of the management API and page")
	flag.Parse()

	logger := zap.NewNop()
	if f.verbose {
		logger, _ = zap.NewDevelopment()
	}
	var err error
	switch {
	case f.node != "" && f.postgres == "":
		err = fmt.Errorf("-node needs -postgres: the journal every node shares")
	case f.node != "":
		var seeds []string
		if f.seeds != "" {
			seeds = strings.Split(f.seeds, ",")
		}
		err = serve(f, seeds, logger)
	default:
		err = demo(os.Stdout, logger)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "guide:", err)
		os.Exit(1)
	}
}
