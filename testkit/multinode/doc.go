// Package multinode runs several Troupe nodes (actor system, remoting and cluster
// membership) and injects faults between them, as Akka's multi-node test kit does with
// its test conductor. It has four modes.
//
// # Nodes in the test process
//
// Start starts N nodes on 127.0.0.1 in the test process, the first as the seed, and
// waits until every node sees every node Up. Options.OnStart starts what else each
// node runs (persistence, distributed data, sharding, singletons), on every start and
// restart of the node. The nodes are wired through a testkit/faultnet network,
// plugged into the transports' public seams
// (remote.Config.Dial and Listen, cluster.Config.Transport). Partition cuts two groups
// of nodes apart in both serf's gossip and the remote transport; PartitionGossip cuts
// serf's gossip only; HealPartition and Heal remove the cuts; CutOneWay drops what one
// node sends another in serf's gossip and cuts their remote connection (as TCP fails
// both ways when one direction drops); SlowLink delays what one node writes to another
// on the remote transport; Network gives the network itself for its other faults.
// Crash kills a node as a killed process, as far as the others can tell: all its links
// are cut at once, then it downs itself behind the cut and its system shuts down; Restart
// starts it again on the same addresses as a new incarnation. Await waits for a
// condition on a node's view of the cluster, re-checking at each cluster event. Nodes
// use cluster.TestTiming and a stable-after of 3s (Options.Configure changes them).
//
// # Nodes in a program
//
// New is Start for programs (examples, demos, benchmarks) that want several nodes in
// one process and to crash or partition them as a test does: it needs no testing.TB,
// returns errors instead of failing a test, logs to Options.Logger, and leaves the
// shutdown to the caller (Shutdown). Crash and the faults work as in a test; AddNode,
// RestartNode, WaitFor and WaitAllUp are Add, Restart, Await and AwaitAllUp with an
// error result and a context. The program imports no internal package: everything it
// uses is public API, as the examples under examples/ show.
//
// # Node processes
//
// BuildNode builds the test kit's own node program (NodePackage, not an example, so
// that changing an example cannot break the test kit), StartNode runs it on free
// loopback ports, and a NodeProcess can be waited on (WaitLine, WaitEvent, WaitKind),
// stopped gracefully (SIGTERM) or killed with SIGKILL. The program writes one JSON
// object per line on its standard output, a Line: first a KindNode line naming the
// node, then a KindState line, one KindEvent line per cluster event, KindUp when the
// node is Up, KindDowned when it learns it was downed, KindStopped when its cluster
// services stop, and KindTerminated, last, when its actor system has terminated; with
// -singleton NAME it also runs a cluster singleton and writes a KindSingleton line when
// its instance there starts and stops (the singleton's "never two" tests). Every
// line carries the wall-clock time it was written, so that lines of several processes
// on one machine can be compared: the netns tests check that a downed node stopped
// before the other side published that its margin passed.
//
// # Node processes in network namespaces
//
// StartNet runs the node program in one Linux network namespace per node, connected by
// veth pairs to one bridge per segment (NetOptions.Segments), and injects real kernel
// faults: SetLink takes the link between two segments down (a partition) and up again,
// and Blackhole makes one node's namespace drop every packet from another (a one-way
// fault, which serf's indirect probes hide). Namespaces, links and bridges get names
// with a random prefix, so concurrent test packages do not collide, and are deleted
// when the test ends, passed or failed. It needs root (CI runs these tests as root);
// elsewhere the tests skip, with a log line saying why (NetAvailable).
//
// In a test, everything is shut down at the end of the test.
package multinode
