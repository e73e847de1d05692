// Package remote lets actors in different actor systems, usually in different
// processes or on different machines, talk as if they were local: a Ref to an actor
// elsewhere is an ordinary actor.Ref, and Tell, Ask, Forward, Respond and Watch work
// across systems with the sender preserved.
//
// # Enabling remoting
//
// Start installs the transport into a system. The system is then reached at
// troupe://name@host:port, and paths of that form resolve with System.Resolve:
//
//	reg := serialization.NewRegistry()
//	serialization.Register[*Greet](reg, "shop.Greet.v1")
//	r, err := remote.Start(sys, remote.Config{ListenPort: 2552, Registry: reg})
//	ref, err := sys.Resolve("troupe://other@10.0.0.7:2552/user/greeter")
//	ref.Tell(&Greet{Who: "Ada"})
//
// Messages cross the wire as msgpack through the registry of stable type names that
// persistence uses too: only registered types are sent and only registered types are
// decoded. Refs inside messages are sent as their full paths (Ref.URI) and resolve on
// the other side. A send of an unregistered type returns ErrUnregistered and goes to
// dead letters; an unknown type arriving is dropped with a log line, and the
// connection stays up.
//
// # Delivery
//
// User messages are delivered at most once, in order per sender-receiver pair, as in
// Akka. Each system opens its own connections to a peer, one per lane: the user lane
// carries messages, the system lane carries watch, unwatch and death notices, so a
// flood of messages never delays a watch. System messages are sequenced,
// acknowledged and resent until acknowledged, for as long as the peer incarnation
// lives. Writes are batched: a writer goroutine per lane takes everything queued and
// writes it in one call whenever the socket is free. The queue per peer is bounded
// (OutboundQueueSize); overflow goes to dead letters and is counted.
//
// Each user frame names its recipient, sender and message type through a dictionary
// kept per connection, so a steady stream sends each name once, and the receiver
// resolves each name once.
//
// # Incarnations and quarantine
//
// Every start of a system is a new incarnation with a random uid, exchanged in the
// handshake together with the system name, address and protocol version, and
// optionally proven with a shared secret (Config.Secret) and mutual TLS (Config.TLS).
// When a peer's uid changes, its old incarnation is quarantined: actors watched there
// are reported terminated, and messages for actors of the old incarnation (Refs carry
// the actor's uid) are dead letters. A quarantined incarnation is refused for good; it
// must restart.
//
// # Remote death watch
//
// Watching an actor in another system yields Terminated when it stops. While a system
// has actors watched by this one, a phi-accrual failure detector follows its
// heartbeats; when it gives up, every watched actor there is reported Terminated with
// AddressTerminated set, and the incarnation is quarantined. The cluster layer will
// feed this from membership instead.
//
// # Strangers
//
// Frames are length-prefixed with a maximum size. A malformed frame, an oversized
// frame or a failed handshake closes that connection only, with a log line;
// other peers are unaffected. The frame and handshake decoders are fuzzed.
package remote
