// Package routing spreads messages over a set of actors, the routees: pool routers
// that spawn and supervise their routees, group routers over given actors or paths,
// and cluster-aware groups whose routees follow the cluster's membership.
//
// # Routers
//
// NewPool starts a router actor that spawns PoolConfig.Size routees from
// PoolConfig.Routee as its children and supervises them with PoolConfig.Strategy;
// NewGroup starts one over GroupConfig.Routees and GroupConfig.Paths, actors it
// watches but does not own; NewClusterGroup starts one over the actor at a path on
// every cluster member that is Up, reachable and has a role. Each returns a *Router:
//
//	r, err := routing.NewPool(ctx, sys, routing.PoolConfig{
//		Routee: workerProps,
//		Size:   8,
//		Logic:  routing.ConsistentHashing(routing.ConsistentHashingConfig{}),
//	})
//	err = r.Tell(job)                      // routed on this goroutine, straight to a routee
//	f := r.Ask(ctx, query)                 // the routee's reply
//	err = r.Tell(routing.Broadcast{Msg: m}) // to every routee
//
// A routee that stops is removed (the router watches every routee). A pool stops
// when its last routee is gone (nothing would route again), unless it has a Resizer,
// which grows it back on the next message; an actor.PoisonPill
// sent to it stops it and, with it, its routees; a group stays up with no routees,
// failing sends with ErrNoRoutees, until some are added.
//
// # Routing on the sender's goroutine
//
// A router that received every message and passed it on would cost each message a
// second trip through a mailbox. So a Router routes on the caller's goroutine: the
// router actor publishes each new set of routees as an immutable snapshot (an atomic
// pointer, replaced on every change), and Send, Tell and Ask read it, let the logic
// select the routee, and send the message straight there with the caller as sender,
// so the routee's Respond reaches the caller (SendContext also carries a trace).
// Round-robin routing allocates nothing and costs an atomic add.
//
// What goes through the router actor: management messages (GetRoutees, AddRoutee,
// RemoveRoutee, AdjustPoolSize, UpdateRoutees), actor.PoisonPill and actor.Kill,
// every message of a scatter-gather or tail-chopping router, and every message sent
// to Router.Ref rather than through the Router. Router.Ref is the router as an
// ordinary Ref, to pass in messages or to other nodes: the router actor routes what
// it receives with the original sender (Forward). Messages from one sender keep
// their order towards each routee when they all go through the Router, or all
// through Ref; mixing the two can reorder them, as two paths always can.
//
// # Logics
//
// A Logic prepares a Selector for each set of routees; the Selector picks the
// routees of each message, from any goroutine. RoundRobin, Random and ToAll
// (every routee) are what their names say. ConsistentHashing sends messages with the
// same key (Keyed, or ConsistentHashingConfig.Key) to the same routee, on a ring
// with virtual nodes: when a routee comes or goes, only the keys on its share of the
// ring move. SmallestMailbox prefers an idle routee, then a running one, then a
// backlogged one (actor.Ref.Activity). ScatterGatherFirstCompleted asks every
// routee and passes the first reply on; TailChopping asks one routee, then one more
// after each interval, and passes the first reply on; both give up with an
// actor.Failure wrapping ErrNoReply after Within. Implement Logic for others.
//
// # Resizing a pool
//
// PoolConfig.Resizer grows a pool while its routees are busy and shrinks it while
// they idle, between bounds, as Akka's default resizer does: every MessagesPerResize
// messages, the router actor counts the routees under pressure (actor.Ref.Activity)
// and adds or removes a share of them.
//
// # Feeding a group
//
// UpdateRoutees replaces a group's routees at once. A cluster-aware group is fed by
// a child that follows the cluster's events and sends it UpdateRoutees; any other
// source of listings (a receptionist's, say) can do the same through Router.Ref.
// There is no cluster-aware pool: spawning routees on other members would need remote
// deployment, which Troupe does not have.
//
// # What can be lost, and when
//
// A router adds no buffer: a message is routed at once or not at all. Every message
// it cannot route is published as a dead letter of the router actor (counted in
// actor.System.DeadLetterCount, logged at a bounded rate, failing an Ask at once),
// and Send returns the reason:
//   - the router has no routees (ErrNoRoutees): a group whose routees all stopped
//     or that has none yet, a cluster-aware group with no member that qualifies;
//   - a consistent-hashing router finds no key for the message (ErrNoKey);
//   - the router has stopped (actor.ErrRecipientStopped; Send then returns nil, as
//     actor.Ref.Send does for a stopped actor).
//
// Past the router, a routed message is an ordinary message to its routee, with the
// runtime's and the transport's own losses: a routee that stops with messages in
// its mailbox (a pool routee removed with RemoveRoutee or AdjustPoolSize first
// handles what is queued for it; one stopped by supervision or a crash does not),
// and the messages on their way to a member that crashes. A routee is removed when
// the router learns that it stopped, so messages routed to it meanwhile are dead
// letters where it lived. For the requests of scatter-gather and tail-chopping, the
// replies after the first are discarded by the collector that waits for them, and
// replies that come after Within, when it has stopped, are dead letters. For an Ask
// through a ToAll router or of a Broadcast, the first reply completes the Ask and
// the others are dead letters (actor.ErrLateReply).
package routing
