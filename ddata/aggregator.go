package ddata

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

// maxSecondaryNodes is how many more nodes a read or write asks once timeout/5 has
// passed without enough replies.
const maxSecondaryNodes = 10

// peer is another node a read or write may ask: an Up (or Exiting) member.
type peer struct {
	node      cluster.UniqueAddress
	reachable bool
	exiting   bool
}

// fanout is the node choice and reply counting that reads and writes share. Times
// are inputs; it starts no timer.
type fanout struct {
	needed    int // replies needed from other nodes
	known     int // the nodes that count, the local one included
	primary   []cluster.UniqueAddress
	secondary []cluster.UniqueAddress
	asked     map[cluster.UniqueAddress]bool // nodes sent to so far
	replied   map[cluster.UniqueAddress]bool
	failed    map[cluster.UniqueAddress]bool // nodes that answered with a failure
	start     time.Time
	timeout   time.Duration

	secondarySent bool
}

// newFanout picks the nodes for level l among peers: the fewest needed first
// (reachable before unreachable, each group shuffled by rng, or in node order when
// ordered or rng is nil), then up to maxSecondaryNodes more for after timeout/5.
func newFanout(l level, peers []peer, ordered bool, rng *rand.Rand, now time.Time) fanout {
	var reachable, unreachable []cluster.UniqueAddress
	for _, p := range peers {
		if p.exiting && l.excludesExiting() {
			continue
		}
		if p.reachable {
			reachable = append(reachable, p.node)
		} else {
			unreachable = append(unreachable, p.node)
		}
	}
	for _, group := range [][]cluster.UniqueAddress{reachable, unreachable} {
		if ordered || rng == nil {
			sortNodes(group)
		} else {
			rng.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		}
	}
	all := append(reachable, unreachable...)
	f := fanout{
		needed:  l.required(len(all)+1) - 1,
		known:   len(all) + 1,
		asked:   make(map[cluster.UniqueAddress]bool),
		replied: make(map[cluster.UniqueAddress]bool),
		failed:  make(map[cluster.UniqueAddress]bool),
		start:   now,
		timeout: l.timeout,
	}
	first := min(f.needed, len(all)) // fewer when a From level asks for more nodes than there are
	f.primary = all[:first:first]
	f.secondary = slices.Clone(all[first:min(len(all), first+maxSecondaryNodes)])
	for _, n := range f.primary {
		f.asked[n] = true
	}
	return f
}

// tick returns the secondary nodes to send to when timeout/5 has passed (once), and
// whether the timeout has passed.
func (f *fanout) tick(now time.Time) (secondary []cluster.UniqueAddress, timedOut bool) {
	if !f.secondarySent && now.Sub(f.start) >= f.timeout/5 {
		f.secondarySent = true
		for _, n := range f.secondary {
			if !f.asked[n] {
				f.asked[n] = true
				secondary = append(secondary, n)
			}
		}
	}
	return secondary, now.Sub(f.start) >= f.timeout
}

// reply records a successful reply; it reports false for a node that was not
// asked or replied already.
func (f *fanout) reply(from cluster.UniqueAddress) bool {
	if !f.asked[from] || f.replied[from] || f.failed[from] {
		return false
	}
	f.replied[from] = true
	return true
}

// fail records a failed reply.
func (f *fanout) fail(from cluster.UniqueAddress) {
	if f.asked[from] && !f.replied[from] {
		f.failed[from] = true
	}
}

// tooFew reports whether fewer nodes count than the level needs: only a From level
// with n above the number of nodes. Nothing can change that before the timeout
// but a member joining, and the operation does not wait for one.
func (f *fanout) tooFew() bool { return f.needed > f.known-1 }

// enough reports whether the needed replies have arrived.
func (f *fanout) enough() bool { return len(f.replied) >= f.needed }

// hopeless reports whether the needed replies can no longer arrive: too few nodes
// are left that have not failed, counting the secondary ones not yet asked.
func (f *fanout) hopeless() bool {
	return len(f.primary)+len(f.secondary)-len(f.failed) < f.needed
}

// writeOutcome is where a write stands.
type writeOutcome uint8

const (
	writePending     writeOutcome = iota
	writeSucceeded                // enough replicas have the write: UpdateSuccess
	writeTimedOut                 // the timeout passed, or too many replicas failed: UpdateTimeout
	writeStoreFailed              // the local durable store failed: StoreFailure
	writeTooFew                   // fewer nodes count than the level needs (WriteTo(n)): decided at once
)

// writeAggregator decides a write with a WriteConsistency other than WriteLocal:
// which nodes to send the value to, and when the write has succeeded (needed
// acknowledgements from other nodes, and the local durable store's when the key is
// durable) or failed. The replicator has applied the write locally before; a failed
// write is not undone.
type writeAggregator struct {
	fanout
	durable     bool // the key is durable: the local store must confirm
	localStored bool
	outcome     writeOutcome
}

// newWriteAggregator plans a write. ordered sends in node order instead of a
// shuffle: use it for values with causal deltas, so that the same nodes get
// consecutive writes and their delta sequence numbers stay in step. Send to
// primary at once.
func newWriteAggregator(c WriteConsistency, peers []peer, ordered bool, rng *rand.Rand, durable bool, now time.Time) *writeAggregator {
	w := &writeAggregator{fanout: newFanout(c.l, peers, ordered, rng, now), durable: durable}
	if w.tooFew() {
		w.outcome = writeTooFew
	}
	w.decide()
	return w
}

func (w *writeAggregator) decide() {
	if w.outcome != writePending {
		return
	}
	switch {
	case w.enough() && (!w.durable || w.localStored):
		w.outcome = writeSucceeded
	case w.hopeless():
		w.outcome = writeTimedOut
	}
}

// ack records a node's acknowledgement.
func (w *writeAggregator) ack(from cluster.UniqueAddress) writeOutcome {
	w.reply(from)
	w.decide()
	return w.outcome
}

// nack records a node's refusal (it could not store the write).
func (w *writeAggregator) nack(from cluster.UniqueAddress) writeOutcome {
	w.fail(from)
	w.decide()
	return w.outcome
}

// deltaNack reports whether to resend the full value to from, which could not
// apply the delta it was sent (a gap in its sequence numbers).
func (w *writeAggregator) deltaNack(from cluster.UniqueAddress) bool {
	return w.outcome == writePending && w.asked[from] && !w.replied[from] && !w.failed[from]
}

// localStore records the local durable store's result.
func (w *writeAggregator) localStore(ok bool) writeOutcome {
	if w.outcome == writePending {
		if !ok {
			w.outcome = writeStoreFailed
			return w.outcome
		}
		w.localStored = true
		w.decide()
	}
	return w.outcome
}

// tick returns the secondary nodes to send to, once timeout/5 has passed, and the
// outcome: writeTimedOut once the timeout has passed without success.
func (w *writeAggregator) tick(now time.Time) ([]cluster.UniqueAddress, writeOutcome) {
	if w.outcome != writePending {
		return nil, w.outcome
	}
	secondary, timedOut := w.fanout.tick(now)
	if timedOut {
		w.outcome = writeTimedOut
		return nil, w.outcome
	}
	return secondary, w.outcome
}

// readOutcome is where a read stands.
type readOutcome uint8

const (
	readPending  readOutcome = iota
	readDone                 // enough replies: answer with the merged value
	readTimedOut             // GetFailure
	readTooFew               // fewer nodes count than the level needs (ReadFrom(n)): decided at once
)

// readAggregator decides a read with a ReadConsistency other than ReadLocal: which
// nodes to ask, and when enough have replied. It merges the replies into the local
// value. When it is done, the replicator writes the merged value locally (read
// repair) before it answers, so that a later local read sees at least as much.
type readAggregator struct {
	fanout
	result  ReplicatedData // the local value merged with the replies; nil while none
	outcome readOutcome
}

// newReadAggregator plans a read. local is the local replica's value (a copy the
// aggregator may change), or nil when the key is absent here. Send to primary at
// once.
func newReadAggregator(c ReadConsistency, peers []peer, rng *rand.Rand, local ReplicatedData, now time.Time) *readAggregator {
	r := &readAggregator{fanout: newFanout(c.l, peers, false, rng, now), result: local}
	if r.tooFew() {
		r.outcome = readTooFew
	}
	r.decide()
	return r
}

func (r *readAggregator) decide() {
	if r.outcome != readPending {
		return
	}
	switch {
	case r.enough():
		r.outcome = readDone
	case r.hopeless():
		r.outcome = readTimedOut
	}
}

// reply records a node's answer: its value for the key, or nil when it has none.
// The aggregator keeps no reference to v. A value of another type than the ones
// merged so far counts as a failed reply and returns the merge error.
func (r *readAggregator) reply(from cluster.UniqueAddress, v ReplicatedData) (readOutcome, error) {
	if r.outcome != readPending || !r.asked[from] || r.replied[from] || r.failed[from] {
		return r.outcome, nil
	}
	if v != nil {
		var err error
		if r.result == nil {
			r.result = v.CloneData()
		} else if err = r.result.MergeData(v); err != nil {
			r.fail(from)
			r.decide()
			return r.outcome, err
		}
	}
	r.fanout.reply(from)
	r.decide()
	return r.outcome, nil
}

// tick returns the secondary nodes to ask, once timeout/5 has passed, and the
// outcome: readTimedOut once the timeout has passed without enough replies.
func (r *readAggregator) tick(now time.Time) ([]cluster.UniqueAddress, readOutcome) {
	if r.outcome != readPending {
		return nil, r.outcome
	}
	secondary, timedOut := r.fanout.tick(now)
	if timedOut {
		r.outcome = readTimedOut
		return nil, r.outcome
	}
	return secondary, r.outcome
}

// value returns the merged value, nil when no replica had the key.
func (r *readAggregator) value() ReplicatedData { return r.result }
