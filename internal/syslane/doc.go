// Package syslane is the reliable system-message lane between two actor systems (watch,
// unwatch, death notices, remote stops) as two pure state machines: a Sender that
// numbers messages, keeps each until the receiver acknowledges it and decides what to
// write, what to write again and when to give up, and a Receiver that applies each
// message once, in order.
//
// Neither reads a clock, starts a goroutine or does any I/O: the caller passes the time
// in and carries the decisions out. Package remote drives them over TCP; a simulator
// can drive them in virtual time.
//
// The protocol: the sender numbers messages 1, 2, 3, ... for one incarnation of the
// receiving system and writes them in order; the receiver applies the message it
// expects next and ignores the others, and acknowledges the highest number up to which
// it has applied everything. The sender writes again what is unacknowledged after a
// new connection, or when acknowledgements stall for longer than ResendAfter. When
// Capacity messages are unacknowledged, the sender refuses more: the receiver is taken
// to be gone for good (the caller quarantines it).
//
//troupe:core
package syslane
