// Package remote lets actors in different actor systems, usually in different
// processes or on different machines, talk as if they were local: a Ref to an actor
// elsewhere is an ordinary actor.Ref, and Tell, Ask, Forward, Respond and Watch work
// across systems with the sender preserved.
//
// # Enabling remoting
//
// Start installs the transport into a system (once; Get returns it). The system is
// then reached at troupe://name@host:port, and paths of that form resolve with
// System.Resolve:
//
//	reg := serialization.NewRegistry()
//	serialization.Register[*Greet](reg, "shop.Greet.v1")
//	r, err := remote.Start(sys, remote.Config{ListenPort: 2552, Registry: reg})
//	ref, err := sys.Resolve("troupe://other@10.0.0.7:2552/user/greeter")
//	err = ref.Tell(&Greet{Who: "Ada"})
//
// Messages cross the wire as msgpack through the registry of stable type names that
// persistence uses too: only registered types are sent and only registered types are
// decoded. Refs inside messages are sent as their full paths (Ref.URI) and resolve on
// the other side. The runtime's own messages need no registration: PoisonPill and
// Kill act remotely as they do locally, and a Failure crosses as its error's text (an
// Ask answered with one fails with that text, matching ErrRemoteFailure).
//
// Config.Dial and Config.Listen are the transport's network seams: they make its
// connections (plain TCP by default), and a function of the user's can route them
// through a tunnel or an in-memory network, or inject faults (testkit/faultnet cuts,
// black-holes and slows links through them).
//
// # The cluster's interface
//
// The cluster layer finds the running transport with Get and uses methods no
// application needs: SetMembership hands failure detection for members to it,
// Quarantine ends a removed member's incarnation, OnQuarantinedBy reports a peer that
// refuses this incarnation; Serialization and MaxFrameSize serve layers that pack
// several messages into one of their own.
//
// # Delivery
//
// User messages are delivered at most once, in order per sender-receiver pair, as in
// Akka, also across a reconnect: a peer's new connection is read only once the old
// one has been read to its end. Each system opens its own connections to a peer, one
// per lane: the user lane carries messages, the system lane carries watch, unwatch,
// stop and death notices, so a flood of messages never delays a watch. System
// messages are sequenced, acknowledged and resent until acknowledged, for as long as
// the peer incarnation lives (the protocol is a pair of pure state machines in
// internal/syslane). Writes are batched: a writer goroutine per lane takes everything
// queued and writes it whenever the socket is free. A sender that finds the user lane
// idle writes its message itself, with one write that never waits, and leaves any
// rest to the writer: a request after a pause costs no hand-off to the writer
// goroutine.
//
// A send to a remote actor encodes the message into the queue before it returns; the
// queue holds bytes, not the message. A message the transport refuses (its error is
// returned) becomes a dead letter as it is. Troupe's own layers rely on this to reuse
// their buffers once a send returned nil (the singleton's proxy does).
//
// The queue towards each peer is bounded in bytes (Config.OutboundQueueBytes). A send
// that finds it full fails with ErrOverloaded, naming the recipient, and the message
// becomes a dead letter; with Config.BackpressureTimeout the sender first waits for
// room, and Remote.Send waits until its context ends.
//
// Each user frame names its recipient, sender and message type through a dictionary
// kept per connection, so a steady stream sends each name once, and the receiver
// resolves each name once. When more names are in use than the dictionary holds, the
// writer decides which entry each new name replaces and says so on the wire.
//
// # Incarnations and quarantine
//
// Every start of a system is a new incarnation with a random uid, exchanged in the
// handshake together with the system name, address and protocol version, and
// optionally proven with a shared secret (Config.Secret) and mutual TLS (Config.TLS).
// A new uid at an address is believed only when it answers there: this system dialled
// the address, or dialled it back to check a connection's claim. When a peer's uid
// changes, its old incarnation is quarantined: actors watched there are reported
// terminated, messages queued for it and messages for actors of the old incarnation
// (Refs carry the actor's uid) are dead letters. A quarantined incarnation is refused
// for good, with a reason it recognises; it must restart (a cluster member refused so
// by another member takes it as its downing). A send to an address whose incarnation has ended fails
// at once with ErrQuarantined, and makes the transport look for a new one there;
// except at the address of a cluster member (a new incarnation, since the cluster
// quarantines one when it removes the member): there a send waits in the queue, and
// a watch waits, for that look, and reaches the incarnation that answers, or ends as
// for the quarantined one when none new does. A quarantine is logged as a warning,
// once; that of a member which left the cluster gracefully is news, at info.
//
// # Remote death watch
//
// Watching an actor in another system yields Terminated when it stops, after the
// messages it sent the watcher before: the death notice waits until a flush queued
// behind them on the user lane is acknowledged, for at most
// Config.DeathNoticeFlushTimeout. While a system has actors watched by this one, a
// phi-accrual failure detector follows its heartbeats; when it gives up, every
// watched actor there is reported Terminated with AddressTerminated set, and the
// incarnation is quarantined. For the members of a cluster, the cluster's membership
// takes this over. A system that shuts down gracefully does not leave its watchers
// to the failure detector: its transport closes only once the death notices of its
// actors are acknowledged (Config.ShutdownFlushTimeout), and its last system message
// tells each peer that it shuts down, which ends the incarnation there as a
// quarantine does (sends to it fail with ErrQuarantined), logged at info.
//
// # Strangers
//
// One bad client must not hurt anyone else. Frames are length-prefixed with a maximum
// size; a malformed frame (a traced frame whose trace context is cut short or has zero
// ids among them), an oversized frame or a failed handshake closes that connection
// only, with a rate-limited log line (Stats.Rejected counts it; a connection closed
// before it sent a byte, and the handshake of an incarnation quarantined here, are
// logged at debug only: a node going away, a TCP probe). Connections still in their handshake
// are capped in number (Config.MaxPendingConnections, oldest closed first) and in
// memory. Systems known only from refs in received messages are bounded
// (Config.MaxUnverifiedPeers) and dials to them too. The frame, handshake and
// dictionary decoders are fuzzed. Without TLS or the secret, anyone who reaches the
// port can send messages; use TLS (or at least the secret) on any network that is
// not private.
//
// # Metrics
//
// With actor.Config.MeterProvider set, the transport reports messages and bytes sent
// and received and the outbound queue per peer system (attribute peer), drops by
// reason, reconnects, quarantines, refused handshakes, and the heartbeat round trip to
// watched peers outside a cluster (troupe.remote.*, listed in docs/operations.md).
// The counts are the atomics behind Stats, read when the provider collects.
//
// # What can be lost, and when
//
// Every way a message can be dropped, and how you learn of it (an error to the caller
// where there is one, a dead letter naming the recipient and the reason, a counter in
// Stats, and a log line at a bounded rate with a count of the lines held back):
//
//   - Not sent: an unregistered type (ErrUnregistered), a message above MaxFrameSize
//     (ErrFrameTooLarge), a full queue (ErrOverloaded, Stats.Overloaded), a
//     quarantined peer or one that said it shut down (ErrQuarantined; the shutdown is
//     logged at info), a closed transport (ErrClosed), a ref to one
//     unknown system too many (ErrRefusedSender). The send returns the error and the
//     message is a dead letter with it as the reason.
//   - Queued, then dropped: for a peer that is quarantined or says it shuts down
//     (ErrQuarantined; at a cluster member's address, also when the look for a new
//     incarnation finds none) or unreachable for Config.GiveUpAfter (ErrUnreachable).
//     Each message becomes a dead letter with that reason, and a warning is logged
//     when the application's messages are among them (Troupe's own, those implementing
//     actor.DeadLetterSuppression, are expected losses: counted, logged at debug).
//   - Lost with a broken connection: the messages of the write that failed are counted
//     (Stats.Lost) and logged; they may or may not have arrived. Messages the
//     operating system had already accepted may be lost too: they are not counted one
//     by one, and the broken connection is logged with how many were written on it.
//     Among them, on the receiving side: when a peer connects again, its old
//     connection is read to its end first, but closed if it gives nothing for a second
//     (its end lost with the network), and what it held unread is lost (logged there).
//     Messages still queued when the transport closes are counted lost and logged
//     (at debug when all are Troupe's own):
//     it waits, for at most Config.ShutdownFlushTimeout, until every peer it can
//     reach has what was sent to it, so these are the messages for a peer that could
//     not be reached or did not take them in time.
//   - Received, not delivered: a message for an actor that does not exist becomes a
//     dead letter whose recipient names the path (reason actor.ErrNotFound); one that
//     cannot be decoded, or whose sender or refs name one unknown system too many,
//     becomes a dead letter of an Undecodable with the reason (Stats.RefusedSenders
//     for the latter); a full bounded mailbox acts as its policy says.
//   - System messages are dropped only with their incarnation: on quarantine (watchers
//     get Terminated with AddressTerminated), when SystemBufferSize are unacknowledged
//     (the incarnation is quarantined, logged as an error), or when the peer was never
//     reached for GiveUpAfter (logged).
package remote
