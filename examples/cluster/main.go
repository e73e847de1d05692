// Command cluster runs Troupe cluster nodes as separate processes on loopback and
// prints every membership change each node sees.
//
//	go run ./examples/cluster
//
// starts four nodes (this program again, with -node), waits until every node sees
// every node Up, stops one gracefully (SIGTERM: it leaves the cluster during
// coordinated shutdown), then kills another with SIGKILL, so that the survivors see it
// unreachable and the split-brain resolver downs and removes it after stable-after, and
// publishes that its work may be taken over once the down-removal margin has passed.
// At the end the survivors leave too. It takes about ten seconds after the build
// (-nodes 3 shows the equal-split rule instead: the side with the lowest address stays).
//
// To run nodes by hand, one per terminal:
//
//	go run ./examples/cluster -node -remote-port 25520 -gossip-port 7946
//	go run ./examples/cluster -node -remote-port 25521 -gossip-port 7947 -seed 127.0.0.1:7946
//	go run ./examples/cluster -node -remote-port 25522 -gossip-port 7948 -seed 127.0.0.1:7946
//
// Ctrl-C makes a node leave gracefully; kill -9 makes it crash. Every line a node
// prints starts with its own address in brackets. Its first line names its remote
// address, incarnation uid and gossip address:
//
//	[127.0.0.1:25520] node troupe://cluster@127.0.0.1:25520 uid 8817263… gossip 127.0.0.1:7946
//
// then comes the current cluster state, then one line per event ("joined", "up",
// "leaving", "exiting", "unreachable", "reachable", "downed", "removed", "margin-passed",
// "oldest"). Ages are shown as how long a member has been Up.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

// options are the command-line flags.
type options struct {
	node  bool
	nodes int

	name        string
	host        string
	remotePort  int
	gossipPort  int
	seeds       []string
	roles       string
	minMembers  int
	strategy    string
	quorumSize  int
	stableAfter time.Duration
	timing      string
	gossipKey   string
	logLevel    string
}

func main() {
	var o options
	flag.BoolVar(&o.node, "node", false, "run one node; without it, run the demo, which starts -nodes nodes as child processes")
	flag.IntVar(&o.nodes, "nodes", 4, "demo: how many nodes to start (at least 3)")
	flag.StringVar(&o.name, "name", "cluster", "actor system name")
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
	flag.StringVar(&o.roles, "roles", "", "node: roles, separated by commas")
	flag.IntVar(&o.minMembers, "min-members", 0, "min-nr-of-members: no member is Up before this many have joined")
	flag.StringVar(&o.strategy, "strategy", "keep-majority", "split-brain resolver: keep-majority, static-quorum, keep-oldest or down-all")
	flag.IntVar(&o.quorumSize, "quorum-size", 0, "static-quorum: the smallest side that survives")
	flag.DurationVar(&o.stableAfter, "stable-after", 2*time.Second, "split-brain resolver stable-after")
	flag.StringVar(&o.timing, "timing", "test", `failure detection: "test" (about a second) or "lan" (serf's defaults, several seconds)`)
	flag.StringVar(&o.gossipKey, "gossip-key", "", "base64 gossip encryption key of 16, 24 or 32 bytes; the same on every node")
	flag.StringVar(&o.logLevel, "log", "off", "log to stderr at this level: off, error, warn, info or debug")
	flag.Parse()

	var err error
	if o.node {
		err = runNode(o)
	} else {
		err = runDemo(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

// childArgs returns the flags a demo passes on to its nodes.
func (o options) childArgs() []string {
	args := []string{
		"-node", "-host", o.host, "-name", o.name,
		"-strategy", o.strategy, "-stable-after", o.stableAfter.String(),
		"-timing", o.timing, "-log", o.logLevel,
	}
	if o.minMembers > 0 {
		args = append(args, "-min-members", fmt.Sprint(o.minMembers))
	}
	if o.quorumSize > 0 {
		args = append(args, "-quorum-size", fmt.Sprint(o.quorumSize))
	}
	if o.gossipKey != "" {
		args = append(args, "-gossip-key", o.gossipKey)
	}
	return args
}
