package cluster_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/discovery"
	"github.com/troupe-go/troupe/testkit"
	"github.com/troupe-go/troupe/testkit/multinode"
)

// childMark is the first argument after "--" that makes TestBootstrapProcessChild run.
const childMark = "bootstrap-child"

// TestBootstrapProcessChild is one node process of TestBootstrapProcessesFormOneCluster,
// started as this test binary with the arguments "-- bootstrap-child PORTS INDEX AT":
// PORTS the gossip ports of all the nodes (comma-separated, on 127.0.0.1), INDEX its
// own, AT the moment to start the node (Unix milliseconds), the same for all. It
// bootstraps through a static discovery listing them, prints "up CLUSTER GOSSIP
// FORMED" once it sees them all Up, and runs until it is killed.
func TestBootstrapProcessChild(t *testing.T) {
	args := flag.Args()
	if len(args) != 4 || args[0] != childMark {
		t.Skip("runs only as a child process of TestBootstrapProcessesFormOneCluster")
	}
	var targets []discovery.Target
	var addrs []string
	for _, p := range strings.Split(args[1], ",") {
		port, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, discovery.Target{Host: "127.0.0.1", Port: port})
		addrs = append(addrs, targets[len(targets)-1].String())
	}
	i, err := strconv.Atoi(args[2])
	if err != nil || i < 0 || i >= len(targets) {
		t.Fatalf("index %q", args[2])
	}
	at, err := strconv.ParseInt(args[3], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// The nodes start together, so that their rounds run in step: any of them could
	// decide to form a cluster at the same moment, and only the rule keeps it to one.
	<-time.After(time.Until(time.UnixMilli(at)))
	n := node(t, "shop", cluster.Config{GossipPort: targets[i].Port, Bootstrap: cluster.BootstrapConfig{
		Discovery: discovery.Static{Services: map[string][]string{"shop": addrs}}, Lookup: discovery.Lookup{Service: "shop"}, RequiredContactPoints: len(targets),
		StableMargin: time.Second, LookupInterval: 250 * time.Millisecond,
	}})
	await(t, n, func(st cluster.CurrentClusterState) bool {
		up := 0
		for _, m := range st.Members {
			if m.Status == cluster.Up {
				up++
			}
		}
		return up == len(targets) && len(st.Members) == len(targets)
	})
	fmt.Printf("up %s %s %v\n", n.ClusterID(), n.GossipAddress(), len(formed(n)) == 1)
	<-time.After(testkit.Dilated(2 * time.Minute)) // killed long before, unless the parent died
}

// Three OS processes start at once (their nodes at the same moment), each with a
// static discovery that lists all three: they form one cluster, formed by the one with
// the lowest address.
func TestBootstrapProcessesFormOneCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary as three node processes")
	}
	addrs := gossipAddresses(t, 3)
	var ports []string
	low := ""
	for _, a := range addrs {
		ports = append(ports, strconv.Itoa(gossipPort(t, a)))
		if low == "" || gossipPort(t, a) < gossipPort(t, low) {
			low = a
		}
	}
	var procs []*multinode.Process
	at := strconv.FormatInt(time.Now().Add(testkit.Dilated(3*time.Second)).UnixMilli(), 10)
	for i := range addrs {
		procs = append(procs, multinode.StartProcess(t, os.Args[0], "-test.run=^TestBootstrapProcessChild$", "-test.v=false",
			"--", childMark, strings.Join(ports, ","), strconv.Itoa(i), at))
	}
	ids := map[string]bool{}
	var founders []string
	for _, p := range procs {
		line := p.WaitFor(testkit.Dilated(40*time.Second), "a cluster of three, all Up", func(l string) bool {
			return strings.HasPrefix(l, "up ")
		})
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("line %q", line)
		}
		ids[f[1]] = true
		if f[3] == "true" {
			founders = append(founders, f[2])
		}
	}
	if len(ids) != 1 || len(founders) != 1 || founders[0] != low {
		t.Fatalf("clusters %v, formed by %v; want one, formed by %s", ids, founders, low)
	}
}
