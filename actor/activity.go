package actor

// Activity is what a local actor is doing, as its scheduler sees it at one instant:
// see Ref.Activity. Lower values mean less work waiting, so a router that picks the
// least loaded routee (package routing's smallest-mailbox logic) can compare them.
type Activity uint8

// The activities of an actor, from the least busy.
const (
	// ActivityIdle: the actor handles no message and none is waiting.
	ActivityIdle Activity = iota + 1
	// ActivityRunning: the actor is handling messages (one, or a batch of them).
	ActivityRunning
	// ActivityBacklogged: the actor is handling messages and more have arrived since
	// its current run began.
	ActivityBacklogged
	// ActivityUnknown: the Ref is not a live actor of this process (an actor in another
	// system, a stopped actor, a Future, the zero Ref), so nothing is known of its load.
	ActivityUnknown
)

// String names the activity.
func (a Activity) String() string {
	switch a {
	case ActivityIdle:
		return "idle"
	case ActivityRunning:
		return "running"
	case ActivityBacklogged:
		return "backlogged"
	}
	return "unknown"
}

// Activity reports what the actor r denotes is doing now: idle, running, or running
// with a backlog (ActivityUnknown for anything but a live local actor). It reads one
// atomic word and never blocks nor allocates, so it suits a sender choosing among
// actors; by the time the caller acts the answer may have changed.
//
// The default mailbox does not count its messages (a count would cost every Tell a
// second atomic write), so Activity is the load signal a sender can read: an idle
// actor has an empty mailbox, a running one is at work on its mailbox, and a
// backlogged one has been sent more since it started that work.
func (r Ref) Activity() Activity {
	c, ok := r.p.(*cell)
	if !ok || c.isDead() {
		return ActivityUnknown
	}
	switch c.sched.Load() {
	case schedIdle:
		return ActivityIdle
	case schedNotified:
		return ActivityBacklogged
	}
	return ActivityRunning
}
