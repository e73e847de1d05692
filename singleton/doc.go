// Package singleton is Troupe's cluster singleton: one actor that runs on exactly one
// member of the cluster (or of the members with a role), the oldest, and moves to the
// next oldest when that member leaves or fails; and proxies that reach it from any
// member, wherever it runs.
//
// A singleton is a single point of decision (a scheduler, a coordinator, the one
// writer to an external system). It is also a single point of load and, for a few
// seconds after a crash, of unavailability: use it where one instance is the point.
//
// # Starting
//
// Start a manager on every member with the singleton's role, with the same
// configuration, after remoting and the cluster; ask through a proxy from any member:
//
//	m, err := singleton.Start(sys, singleton.Config{
//		Name:  "scheduler",
//		Props: actor.PropsOf(func() actor.Actor { return &scheduler{} }),
//	})
//	proxy, err := singleton.Proxy(sys, singleton.ProxyConfig{Name: "scheduler"})
//	next, err := actor.Ask[Job](ctx, proxy, NextJob{})
//
// The manager runs at /system/singleton/<Name>. The manager on the oldest Up member
// with the role starts the singleton as its child, /system/singleton/<Name>/<Name>;
// the others wait. A manager does nothing until its own member is Up.
//
// # What is promised
//
// At most one instance runs while the cluster's split-brain resolver is in charge. A
// manager starts the singleton only when every older member with the role has either
// certified that its instance terminated and will never start again (a graceful
// hand-over), or been removed from the cluster; the removal of a downed member counts
// only once the cluster's down-removal margin has passed, by which time the downed
// side has stopped its instance. This rests on the resolver: never run a cluster
// without one (or with automatic downing), or a partition runs one singleton on each
// side.
//
// A lease (Config.Lease, a lease.Lease) makes the promise strict even when the
// resolver's assumptions fail (a partition without a resolver, two clusters formed by mistake, a
// process paused for longer than the margin): the manager starts the singleton only
// while it holds the lease, stops it when the lease is lost, and tries again.
//
// There are moments without an instance: during a hand-over (usually well under a
// second), and after a crash until the crashed member is downed, removed and its
// margin has passed (stable-after plus the margin, a few seconds).
//
// # Hand-over and take-over
//
// When the member running the singleton shuts down (System.Shutdown, coordinated
// shutdown), its manager hands the singleton over in the before-cluster-shutdown
// phase, before the member leaves the cluster: the next oldest claims it, the old
// instance gets Config.TerminationMessage (default actor.PoisonPill), and once it has
// terminated the new instance starts. The phase waits until this member can leave
// without losing anything (Status.Finished), up to its timeout. A layer that must
// move its singleton at a point of its own shutdown (sharding, after its shards) sets
// Config.CallerHandsOver and runs Manager.HandOver itself.
//
// When the member crashes or is partitioned away, the split-brain resolver downs it;
// the downed member stops its instance, and the next oldest starts one once the
// member is removed and the cluster has published cluster.RemovalMarginPassed for it.
//
// A singleton that fails (panics, also while starting) is stopped and started again
// after a backoff (Config.Backoff); the messages for it that arrive meanwhile are
// held. One that stops by itself stays stopped until the next hand-over.
//
// # The proxy
//
// Proxy returns an actor.Ref that forwards to the singleton, keeping the sender, so
// that replies and asks work. It sends to the manager on the oldest member with the
// role once that manager confirmed it runs the singleton, and buffers messages while
// the singleton's location is unknown (ProxyConfig.BufferSize, default 1,000; when
// full, the oldest is dropped).
//
// Messages from one proxy reach the singleton in the order they were sent to the
// proxy. A graceful hand-over loses none of them: the old host holds what arrives
// after it asked its instance to stop, and passes it on with its hand-over; the new
// host puts each proxy's messages back in order before it delivers them. (Akka loses
// the messages that reach the old instance after its termination message.)
//
// A proxy sends what it has in batches: the messages it took while it was sending the
// last batch leave together, in one wire message (of at most 32 KiB, or half the
// transport's frame), so a stream through a proxy costs little more than remote tells;
// a lone message leaves at once. The manager decodes each message once, as it delivers
// it.
//
// A message keeps the trace context it was sent to the proxy in (with
// actor.Config.TracerProvider set: a send from an actor handling a traced message,
// Ref.SendContext, or an Ask from a context with a span): when the singleton's Props
// set Trace, its span for the message is the child of the sender's, on whichever
// member it runs, also when the proxy buffered the message or the singleton moved
// meanwhile. Nothing is added while tracing is off.
//
// A message sent through a proxy is serialized, even when the singleton runs on the
// same member: its type must be registered in the registry given to remote.Start. A
// message that cannot be serialized becomes an Undelivered dead letter with the
// reason, and an Ask waiting for its reply fails at once. The messages managers and
// proxies exchange are Troupe's own wire types: nothing to register for them.
//
// # Watching it
//
// Manager.Status says which member the manager believes is the oldest, its state
// (Akka's: Start, Younger, BecomingOldest, Oldest, WasOldest, HandingOver, Stopping,
// End) and whether the singleton runs here; Manager.AwaitStatus waits for a status.
// Dropped counts the messages the system's managers and proxies dropped.
//
// # Metrics
//
// With actor.Config.MeterProvider set, each member reports whether each singleton runs
// there, the messages its proxies buffer, the drops, and histograms of hand-over
// durations (on the member leaving) and take-over durations (on the member becoming
// the oldest), by singleton name (troupe.singleton.*, listed in docs/operations.md).
//
// # What can be lost, and when
//
// Every message that does not reach the singleton is published as an Undelivered
// dead letter (with its sender, so that an Ask fails at once), counted (Dropped,
// Status.Dropped) and logged at a bounded rate with its reason:
//   - its type is not registered (the proxy cannot serialize it);
//   - a proxy's buffer is full while the singleton's location is unknown: the oldest
//     buffered message is dropped;
//   - a manager's buffer (Config.BufferSize) is full while the singleton moves or
//     restarts: the oldest held message is dropped;
//   - the member running the singleton crashes or is downed: what its manager held
//     and what was in its instance's mailbox is lost, and so is what was on its way
//     to it; a proxy may then deliver later messages before earlier ones that were
//     delayed (never twice);
//   - the singleton stopped by itself: messages for it are dropped until the next
//     hand-over starts it again;
//   - the singleton failed: the messages still in its mailbox are dead letters of
//     the actor runtime;
//   - the proxy stops (its actor is stopped, or its system shuts down) with messages
//     buffered: at shutdown it waits a little (five identification intervals) for
//     them to leave first;
//   - the transport refuses a message: its queue towards the singleton's member is
//     full (see remote.Config.OutboundQueueBytes), and so are the other messages of
//     its batch; or it is larger than a frame (remote.Config.MaxFrameSize), and then
//     it travels alone;
//   - the singleton's member cannot resolve the sender of a message in a batch (an
//     actor of a third member, when the transport refuses more strangers, see
//     remote.Config.MaxUnverifiedPeers): the batch is dropped there, as a message the
//     transport cannot decode, logged and counted by the transport.
//
// A host that waits for a proxy's earlier messages (sent to the previous host)
// gives up after the hand-over retry limit (about 15 s) and delivers what it has,
// logging an error.
package singleton
