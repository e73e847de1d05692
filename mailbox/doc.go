// Package mailbox holds the queues that carry messages to Troupe's actors.
//
// Queue is the default: a lock-free, unbounded, multi-producer single-consumer FIFO
// built for one job, being embedded by value in every actor. Its zero value is ready to
// use and costs two pointers (16 bytes); it allocates nothing until the first Push.
// While the consumer keeps up, Push and Pop reuse one small segment and allocate
// nothing; under a backlog the queue grows by linked segments of doubling size (4 to
// 256 elements), and Shrink gives the grown memory back when the consumer turns idle.
// A stream that keeps the consumer just behind its producers moves through full-size
// segments, whose slots the consumer hands back for the next one to reuse.
//
// Bounded and Priority are the alternatives an actor can choose. Bounded holds at most a
// fixed number of elements and applies an Overflow policy when full (drop the newest,
// drop the oldest, or reject). Priority pops the highest priority first and keeps
// arrival order among equals. Both are guarded by a mutex: they trade some speed for
// their extra guarantees and are not on the default path.
//
// All three satisfy Mailbox, the interface the actor runtime uses for a mailbox. The
// runtime's contract with every one of them is the same: any goroutine may offer, one
// consumer at a time pops, and a sender wakes the consumer after each offer. For Queue
// that contract matters: an element is sure to be visible once its own Push and every
// Push that began before it have returned, so a consumer that looks again after each
// wake-up never misses one.
//
// # Handing the consumer role over
//
// Pop, Empty and Shrink must never run on two goroutines at once. A consumer that
// clears a "scheduled" flag and then checks Empty to see whether it should carry on
// breaks that rule: a producer may already have set the flag again and started the next
// consumer. A three-state flag avoids the check altogether:
//
//	producer, after Push:  idle -> running: start a consumer
//	                       running -> notified: nothing more to do
//	consumer, when Pop finds nothing:
//	                       Shrink, then running -> idle: exit
//	                       (fails: notified) store running and drain again
//
// Every transition is a compare-and-swap, except that a notified consumer simply stores
// running (only the consumer ever leaves notified). The consumer touches the queue only
// while the flag is running or notified, so there is exactly one consumer at a time,
// and no element is left behind. The tests in this package run Queue under that protocol.
//
// The package imports nothing from the rest of Troupe.
package mailbox
