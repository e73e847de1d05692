package actor

// sysMsg is a runtime message. System messages travel in their own queue and are always
// processed before user messages, even while the actor is suspended after a failure.
type sysMsg interface{ isSys() }

// sysStop asks the actor to stop.
type sysStop struct{}

// sysWatch registers watcher to be told when the actor stops.
type sysWatch struct{ watcher Ref }

// sysUnwatch removes a watcher.
type sysUnwatch struct{ watcher Ref }

// sysDeath tells a watcher that ref has stopped.
type sysDeath struct {
	ref               Ref
	addressTerminated bool
}

// sysFailed tells a parent that child failed; the child is suspended until the parent
// answers with sysResume, sysRestart or sysStop.
type sysFailed struct {
	child  *cell
	reason error
}

// sysResume lets a suspended actor continue with its next message.
type sysResume struct{}

// sysRestart replaces the actor's instance with a fresh one.
type sysRestart struct{ reason error }

// sysChildTerminated tells a parent that child has finished stopping.
type sysChildTerminated struct{ child *cell }

func (sysStop) isSys()            {}
func (sysWatch) isSys()           {}
func (sysUnwatch) isSys()         {}
func (sysDeath) isSys()           {}
func (sysFailed) isSys()          {}
func (sysResume) isSys()          {}
func (sysRestart) isSys()         {}
func (sysChildTerminated) isSys() {}

// envelope is a user message with its sender.
type envelope struct {
	msg    any
	sender Ref
}

// Internal user-lane messages: they are queued with ordinary messages (so they respect
// suspension, ordering and stashing) but are handled by the runtime.

// deathNote carries a Terminated for a watched actor through the user lane.
type deathNote struct{ t Terminated }

// timerFire is sent by a timer; it is delivered only if the timer is still current.
type timerFire struct {
	key any
	gen uint64
}

// receiveTimeoutTick is sent by the receive-timeout timer.
type receiveTimeoutTick struct{ gen uint64 }
