package sbr

import (
	"time"

	"github.com/troupe-go/troupe/member"
)

// leasePhase is where LeaseMajority's acquisition is.
type leasePhase uint8

const (
	leaseIdle      leasePhase = iota
	leaseDelayed              // the minority side waits until acquireAt
	leaseAcquiring            // the caller is acquiring; LeaseResult ends it
)

// Resolver is the split-brain resolver's state: when the view last changed, how long
// reachability has been unsettled, and where a lease acquisition is. It is pure: times
// are passed in, and Step says when it next needs to be asked (Step.Next), so the
// caller drives it by its inputs and one timer. It is not safe for concurrent use.
//
// The rules, after Akka's split-brain resolver:
//   - Stable after: no decision until membership and reachability have not changed for
//     StableAfter. A member that becomes reachable again is a change too, so a
//     flapping link delays the decision instead of triggering it.
//   - Down all when unstable: when reachability keeps changing, so that no decision
//     is taken within StableAfter plus DownAllWhenUnstable of the first change, every
//     member is downed rather than deciding on a view that never settles (the two sides
//     of a partition could see different pictures). The measurement starts again when
//     no member is unreachable, after a decision, or after 2*StableAfter without a
//     reachability change.
//   - A side's decision is one decision: a member this node saw unreachable that is
//     Down or gone at the next Step was decided on, by this node or by another member
//     whose decision reached it (or by hand), and that ends the instability measurement
//     as this node's own decision does. Members of the side may know different members
//     (one that joined a moment before the partition is known to some only); the first
//     of them to decide downs the members it knows, and a member that knows more is
//     left with the rest unreachable: it decides on them after its own stable-after
//     wait, which the decision restarted, instead of taking that wait for instability
//     and downing its own side. Each such restart takes a member out for good, so a
//     view that never settles is still downed in the end.
//   - Lease majority: only the member responsible for its side (the lowest address
//     among its reachable Up members) decides, down-all-when-unstable included. It
//     acquires the lease, at once on the majority side and after
//     AcquireLeaseDelayForMinority on the minority side, and the outcome decides
//     (LeaseResult). The other members wait for its decision to reach them; a change of
//     the responsible member (it became unreachable) is a reachability change.
type Resolver struct {
	cfg Config

	lastChange      time.Time // membership or reachability, or a decision
	firstChange     time.Time // first reachability change since the last reset; zero: reset
	lastReachChange time.Time
	// seen holds the members that were unreachable at the last Step: one of them Down
	// or gone since was decided on (see decidedElsewhere).
	seen map[member.UniqueAddress]bool

	phase     leasePhase
	acquireAt time.Time
}

// Step is what the resolver wants done after an input.
type Step struct {
	// Decision is to be acted on now; NoAction when there is nothing to do.
	Decision Decision
	// Unstable is set when Decision downs everything because reachability did not
	// settle (down-all-when-unstable).
	Unstable bool
	// AcquireLease asks the caller to start acquiring the lease now and to report the
	// outcome to LeaseResult.
	AcquireLease bool
	// Next is when to call Step again if no input comes first; zero when only an input
	// can make a decision due.
	Next time.Time
}

// NewResolver returns a resolver that treats start as the last change, or an error for
// an invalid configuration.
func NewResolver(cfg Config, start time.Time) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Resolver{cfg: cfg, lastChange: start}, nil
}

// Config returns the resolver's configuration.
func (r *Resolver) Config() Config { return r.cfg }

// MembershipChanged records a membership change (a member joined, changed status or
// was removed) at at: the stable-after wait starts again. An earlier time than the
// last change is ignored.
func (r *Resolver) MembershipChanged(at time.Time) {
	if at.After(r.lastChange) {
		r.lastChange = at
	}
}

// ReachabilityChanged records that the set of unreachable or indirectly connected
// members changed at at: the stable-after wait starts again, and the instability
// measurement starts if it is not running.
func (r *Resolver) ReachabilityChanged(at time.Time) {
	r.MembershipChanged(at)
	if at.After(r.lastReachChange) {
		r.lastReachChange = at
	}
	if r.firstChange.IsZero() {
		r.firstChange = at
	}
}

// Step evaluates the input at now. The caller acts on Step.Decision (downing each
// member listed, itself too when listed), feeds the resulting changes back, and calls
// Step again at Step.Next or at the next input.
func (r *Resolver) Step(now time.Time, in Input) Step {
	v := analyze(in)
	if r.decidedElsewhere(v) {
		r.firstChange = time.Time{} // the side decided: the measurement starts again
	}
	if len(v.unreachable) == 0 {
		// Healed, downed or removed: nothing to decide, and the instability
		// measurement ends. A lease acquisition in flight is answered by LeaseResult.
		r.firstChange = time.Time{}
		if r.phase == leaseDelayed {
			r.phase = leaseIdle
		}
		return Step{}
	}
	stable := r.cfg.StableAfter
	if !r.firstChange.IsZero() && !now.Before(r.lastReachChange.Add(2*stable)) {
		r.firstChange = time.Time{} // quiet for long enough: not unstable
	}
	if r.cfg.Strategy == LeaseMajority {
		if who, ok := responsible(v); !ok || who != v.self {
			// Another member acts for this side, down-all-when-unstable included;
			// wait for its decision to arrive.
			return Step{}
		}
	}
	if r.cfg.DownAllWhenUnstable > 0 && !r.firstChange.IsZero() &&
		!now.Before(r.firstChange.Add(stable+r.cfg.DownAllWhenUnstable)) {
		r.decided(now)
		return Step{Decision: downAll(v), Unstable: true, Next: r.next()}
	}
	if now.Before(r.lastChange.Add(stable)) {
		return Step{Next: r.next()}
	}
	if r.cfg.Strategy != LeaseMajority {
		d := decide(r.cfg, v)
		r.decided(now)
		return Step{Decision: d, Next: r.next()}
	}
	return r.leaseStep(now, v)
}

// decidedElsewhere reports whether a member that was unreachable at the last Step is
// no longer live (Down, or no longer a member): a decision about it was taken since,
// by this node or by another one. It records v's unreachable members for the next Step.
func (r *Resolver) decidedElsewhere(v view) bool {
	gone := false
	for u := range r.seen {
		if _, live := v.live[u]; !live {
			gone = true
		}
	}
	clear(r.seen)
	for u := range v.unreachable {
		if r.seen == nil {
			r.seen = make(map[member.UniqueAddress]bool, len(v.unreachable))
		}
		r.seen[u] = true
	}
	return gone
}

// leaseStep is Step for LeaseMajority once the view is stable.
func (r *Resolver) leaseStep(now time.Time, v view) Step {
	switch r.phase {
	case leaseAcquiring:
		return Step{Next: r.next()}
	case leaseDelayed:
		if now.Before(r.acquireAt) {
			return Step{Next: r.next()}
		}
		r.phase = leaseAcquiring
		return Step{AcquireLease: true, Next: r.next()}
	}
	if d := decide(r.cfg, v); d.Action == DownEveryone {
		r.decided(now) // indirect connections everywhere: no lease needed to down all
		return Step{Decision: d, Next: r.next()}
	}
	if isMinority(r.cfg, v) && r.cfg.AcquireLeaseDelayForMinority > 0 {
		r.phase, r.acquireAt = leaseDelayed, now.Add(r.cfg.AcquireLeaseDelayForMinority)
		return Step{Next: r.next()}
	}
	r.phase = leaseAcquiring
	return Step{AcquireLease: true, Next: r.next()}
}

// LeaseResult takes the outcome of an acquisition that Step asked for and returns the
// decision to act on: the side that holds the lease downs the others, a side that could
// not acquire it (another side holds it, or the lease could not be reached) downs
// itself. It returns NoAction when no acquisition was in flight or nothing is
// unreachable any more.
func (r *Resolver) LeaseResult(now time.Time, in Input, acquired bool) Decision {
	if r.phase != leaseAcquiring {
		return Decision{Action: NoAction}
	}
	r.phase = leaseIdle
	v := analyze(in)
	if len(v.unreachable) == 0 {
		return Decision{Action: NoAction}
	}
	r.decided(now)
	d := decide(r.cfg, v)
	if acquired || d.Action == DownEveryone {
		return d
	}
	return reverse(d, v)
}

// decided records that a decision was taken at now: it counts as a change (the next
// decision waits another stable-after) and ends the instability measurement.
func (r *Resolver) decided(now time.Time) {
	r.lastChange = now
	r.firstChange = time.Time{}
	r.phase = leaseIdle
}

// next returns the earliest moment Step can have something new to say, given that some
// member is unreachable: the end of the stable-after wait (unless a lease acquisition
// is under way), the end of the minority's delay, or the instability deadline when it
// comes before the measurement would be reset.
func (r *Resolver) next() time.Time {
	stable := r.cfg.StableAfter
	var next time.Time
	earlier := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	switch r.phase {
	case leaseIdle:
		earlier(r.lastChange.Add(stable))
	case leaseDelayed:
		earlier(r.acquireAt)
	}
	if r.cfg.DownAllWhenUnstable > 0 && !r.firstChange.IsZero() {
		if at := r.firstChange.Add(stable + r.cfg.DownAllWhenUnstable); at.Before(r.lastReachChange.Add(2 * stable)) {
			earlier(at)
		}
	}
	return next
}
