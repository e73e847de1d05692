// Package singletoncore holds the pure cores of Troupe's cluster singleton (package
// singleton): ManagerCore, the manager's state machine, and ProxyCore, the proxy's
// routing and buffering. They are plain values without goroutines, I/O or clock:
// events in (Handle), decisions out, tested with tables and with a seeded simulation
// of whole clusters. The actors around them, in package singleton (a manager on every
// member with the role, which starts the singleton as its child; a proxy on any
// member), are thin shells that feed them cluster events, messages and timers, and
// carry out their decisions. The messages in messages.go cross the wire as Troupe's
// own wire types (internal/wiretypes): every registry knows them.
//
// # What is promised
//
// At most one instance runs while the split-brain resolver is in charge. A manager
// starts the singleton only in state Oldest, and it enters Oldest only when every
// member with the role that is older than its own has either certified that its
// singleton terminated and will never start again (HandOverDone), or been removed; the
// removal of a downed member counts only once the down-removal margin has passed
// (RemovalMarginPassed), by which time the resolver has made the downed side stop its
// singleton. This rests on the cluster's own promises: members agree on ages (a
// member that becomes Up is younger than, and knows, every member Up before it), a
// downed member stops well within the margin, and the resolver (or a human) never
// leaves two sides of a partition both running.
//
// A lease (ManagerConfig.UseLease; the shell acquires it) makes this strict even when
// those promises fail (a partition without a resolver, two clusters formed by
// mistake): the manager starts the singleton only while it holds the lease, stops it
// when the lease is lost and then tries to acquire it again.
//
// There are moments without any instance: during a hand-over, and after a crash until
// the crashed member is downed, removed and the margin has passed.
//
// # Hand-over
//
// When the member hosting the singleton leaves (coordinated shutdown, SelfLeaving), its
// manager asks the next oldest to take over (TakeOverFromMe, state WasOldest). That
// manager claims the singleton from every older member (HandOverToMe, state
// BecomingOldest). The leaving manager sends the singleton its termination message
// (state HandingOver) and, when it has terminated, answers HandOverDone (state End);
// the new manager starts the singleton (state Oldest). A member that leaves without
// hosting the singleton tells the others not to wait for it (TakeOverFromMe), because
// the cluster shows it Leaving only after the singleton phase of its shutdown.
//
// When the host crashes, the cluster's failure detector and split-brain resolver down
// it; once it is removed and the margin has passed, the next oldest starts the
// singleton without a hand-over.
//
// # Nothing lost at a graceful hand-over
//
// Akka's proxies send to the singleton itself, and what reaches the old instance after
// its termination message is lost. Troupe's proxies send to the manager that hosts the
// singleton, and a graceful hand-over loses nothing: every message sent through a
// proxy reaches the new instance, in the order that proxy sent it, unless a buffer
// overflows. It works like this:
//
//   - A proxy numbers the messages it sends (Envelope.Seq, without gaps) and marks
//     where each run of messages to one manager starts (After, Prev). It sends them
//     in batches (Batch: consecutive numbers of one run), which a manager handles as
//     the envelopes they stand for.
//   - The host delivers to the singleton while it runs. It stops delivering before
//     it sends the termination message, so everything it delivered is ahead of that
//     message in the singleton's mailbox, and holds what arrives afterwards.
//   - Its HandOverDone carries the delivery table (the next number expected from each
//     proxy) and the held messages in order. In End it forwards whatever still
//     reaches it, and tells its proxies it departed; they detach (Detach, always a
//     proxy's last message to a manager), turn to the new host and number on.
//   - The new host delivers each proxy's messages in number order: a message whose
//     run started after messages it has not seen yet waits for them, which come from
//     the previous host, directly or through the managers in between.
//   - A leaving manager is Finished (its member may leave) only when its proxies have
//     detached and its successor confirmed it received everything (Final,
//     HandOverComplete); a proxy that stops detaches first.
//
// Only the transport's order between one sender and one receiver is relied on.
//
// # What can be lost, and when
//
//   - A proxy's buffer is full: the oldest buffered message is dropped (Dropped).
//   - A manager's buffer (ManagerConfig.BufferSize) is full while the singleton
//     moves: the oldest held message is dropped (Dropped).
//   - A member crashes or is downed: the messages it held (in its manager, its
//     singleton's mailbox, its proxies' buffers) are lost, and so are messages that
//     were on their way to it; a downed manager reports those it still receives as
//     Dropped. After such a loss a proxy's later messages may be delivered before
//     earlier ones that were delayed (never twice).
//   - A host waits for a proxy's earlier messages at most the retry limit (about 15
//     seconds by default); past it, it delivers what it has and raises an Alert.
//   - The singleton stops by itself while it is hosted: messages for it are dropped
//     until the next hand-over starts it again.
//
// Every drop is a Dropped decision, which the shells turn into a dead letter, a count
// and a rate-limited log line.
//
// # Differences from Akka
//
// Beyond the lossless hand-over: a manager waits for a certificate from every older
// member that is not removed, not only the previous oldest; a younger manager asked to
// hand over answers HandOverDone even while its member is leaving, and never becomes
// the oldest afterwards; a member that leaves without hosting announces it; a
// manager that was the oldest never takes the singleton back. The states,
// messages, defaults (retry interval 1 s, at least 15 retries, proxy buffer 1,000,
// identification every second) and retry limits are Akka's.
//
//troupe:core
package singletoncore
