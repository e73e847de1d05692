// Package sim runs whole Troupe clusters in virtual time, under a seeded schedule of
// faults, and checks Troupe's guarantees as they run.
//
// Each node is complete: an actor system with remoting, cluster membership (serf and
// the split-brain resolver with their production defaults), distributed data, a
// cluster singleton, persistence, and a sharded event-sourced entity type. The nodes
// reach each other only through an in-memory Network plugged into the transports'
// public seams (remote.Config's Dial and Listen, cluster.Config's Transport); they
// share one in-memory journal, 1 to 20 ms away from each node, one write in ten 50 to
// 500 ms more. Every entity has a writer, which sends one request at a time (each
// stored as an event, and acknowledged once stored), and a reader; each request goes
// through a random running node. Every node adds to a replicated set (distributed data,
// WriteMajority) every few seconds. Run puts all of it in a testing/synctest bubble, so
// every timer of every layer runs in virtual time: a cluster's minutes pass about 150
// times faster than the wall clock, with the production timings (failure detection,
// stable-after, down-removal margin, hand-off retries) unchanged.
//
// # Fault schedules
//
// Generate turns a seed into a schedule (Event): crashes (the node's links are cut
// and its journal unplugged at once; its actors run down behind the cut), restarts as
// new incarnations on the same address with the usual configuration, graceful leaves,
// joins of new nodes, partitions into two or three sides (one direction first, the way
// back up to 8 s later), one-way cuts, delayed links, lossy links, slow nodes, and
// heals. Every link also has a base latency of 0.2 to 20 ms, and gossip packets a
// jitter. The schedule ends with a heal and the restart of every node that is down; a
// fault added to a link keeps the faults it has (a delay does not undo a cut). Every
// run then ends with a graceful phase, once the last failure's effects may have ended:
// a new node joins, and later a node leaves.
// The first seed node restarts only as docs/cluster.md says to restart it (while
// another seed node is Up and reachable from it, or no node is Up): otherwise it would
// form a second cluster, as Akka's first seed does.
//
// # Checkers
//
// A Checker collects what the nodes report and finds violations; the simulation
// reports to one, and any test can use one the same way:
//   - never two live instances of the singleton, nor of one entity;
//   - no acknowledged event lost, and no gap, duplicate or reorder in a history, both
//     when an entity recovers and in the journal at the end; no write refused because
//     another writer used its sequence number;
//   - no request lost while only graceful changes (joins, leaves, and the
//     rebalancing and hand-offs they cause) happened: a request that fails while no
//     failure had effects (Options.Settle after each), through a node that runs and
//     became Up, is a violation; the graceful phase makes every run check this;
//   - after the last event the cluster converges (every running node sees every other
//     Up and reachable), every entity answers from every node, and the replicated set
//     of distributed data is the same on every node, holds nothing that was not
//     added and everything a still-running incarnation added, all within
//     Options.ConvergeWithin.
//
// # Replaying a failure
//
// A failing Run names the seed, its schedule, the log of what happened, a file with
// everything the nodes logged at Debug and above, and the command that replays it
// (TROUPE_SIM_SEED=n). A replay is deterministic in what
// matters most and not in everything: the schedule, every fault's virtual time, the
// latencies and the workload's choices come from the seed alone, and virtual time does
// not depend on the machine's speed or load, so the same seed puts the same faults at
// the same moments of the cluster's life. Within one virtual instant, though, the Go
// scheduler still interleaves goroutines as it likes, and packet losses are drawn in
// the order packets are sent; a failure that depends on such an interleaving may
// need the seed to be run a few times (-count) to show again.
//
// TestSimulation runs a fixed set of seeds in CI. TROUPE_SIM_SEEDS=n runs seeds 1 to n,
// TROUPE_SIM_SEEDS=a-b seeds a to b (to share thousands between processes), and
// TROUPE_SIM_LOG=1 prints the nodes' logs. The bugs the simulation found are kept
// as tests with their schedules written out (seeds_test.go).
//
// # What it does not model
//
// Process pauses: a node's timers fire on time, so the two sides of a partition
// decide within moments of each other, and the down-removal margin, which covers a
// side that acts late (a long garbage-collection pause, a frozen virtual machine), is
// not exercised. Disks: the journal is in memory and never fails or corrupts a record
// (journaltest and the journals' own tests cover that). Clocks: every node reads the
// same virtual clock.
package sim
