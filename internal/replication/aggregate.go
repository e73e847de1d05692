package replication

import (
	"math/rand/v2"
	"slices"
	"time"
)

// MaxSecondaryNodes is how many more nodes a read or write asks once timeout/5 has
// passed without enough replies.
const MaxSecondaryNodes = 10

// Peer is another node a read or write may ask: an Up (or Exiting) member.
type Peer[N comparable] struct {
	Node      N
	Reachable bool
	Exiting   bool
}

// Fanout is the node choice and reply counting that reads and writes share. Times
// are inputs; it starts no timer.
type Fanout[N comparable] struct {
	needed    int // replies needed from other nodes
	known     int // the nodes that count, the local one included
	primary   []N
	secondary []N
	asked     map[N]bool // nodes sent to so far
	replied   map[N]bool
	failed    map[N]bool // nodes that answered with a failure
	start     time.Time
	timeout   time.Duration

	secondarySent bool
}

// NewFanout picks the nodes for level l among peers: the fewest needed first
// (reachable before unreachable, each group shuffled by rng, or in cmp's order when
// ordered or rng is nil), then up to MaxSecondaryNodes more for after timeout/5.
func NewFanout[N comparable](l Level, peers []Peer[N], cmp func(a, b N) int, ordered bool, rng *rand.Rand, now time.Time) Fanout[N] {
	var reachable, unreachable []N
	for _, p := range peers {
		if p.Exiting && l.ExcludesExiting() {
			continue
		}
		if p.Reachable {
			reachable = append(reachable, p.Node)
		} else {
			unreachable = append(unreachable, p.Node)
		}
	}
	for _, group := range [][]N{reachable, unreachable} {
		if ordered || rng == nil {
			slices.SortFunc(group, cmp)
		} else {
			rng.Shuffle(len(group), func(i, j int) { group[i], group[j] = group[j], group[i] })
		}
	}
	all := append(reachable, unreachable...)
	f := Fanout[N]{
		needed:  l.Required(len(all)+1) - 1,
		known:   len(all) + 1,
		asked:   make(map[N]bool),
		replied: make(map[N]bool),
		failed:  make(map[N]bool),
		start:   now,
		timeout: l.Timeout,
	}
	first := min(f.needed, len(all)) // fewer when a From level asks for more nodes than there are
	f.primary = all[:first:first]
	f.secondary = slices.Clone(all[first:min(len(all), first+MaxSecondaryNodes)])
	for _, n := range f.primary {
		f.asked[n] = true
	}
	return f
}

// Primary returns the nodes to send to at once.
func (f *Fanout[N]) Primary() []N { return f.primary }

// Needed returns how many replicas the level needs, the local one included.
func (f *Fanout[N]) Needed() int { return f.needed + 1 }

// Known returns how many nodes count, the local one included.
func (f *Fanout[N]) Known() int { return f.known }

// Answered returns how many replicas have the write or answered the read so far,
// the local one included.
func (f *Fanout[N]) Answered() int { return len(f.replied) + 1 }

// Timeout returns the level's timeout.
func (f *Fanout[N]) Timeout() time.Duration { return f.timeout }

// Deadline returns when the operation times out.
func (f *Fanout[N]) Deadline() time.Time { return f.start.Add(f.timeout) }

// Asked reports whether n was sent to and has not answered yet.
func (f *Fanout[N]) Asked(n N) bool { return f.asked[n] && !f.replied[n] && !f.failed[n] }

// tick returns the secondary nodes to send to when timeout/5 has passed (once), and
// whether the timeout has passed.
func (f *Fanout[N]) tick(now time.Time) (secondary []N, timedOut bool) {
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
func (f *Fanout[N]) reply(from N) bool {
	if !f.Asked(from) {
		return false
	}
	f.replied[from] = true
	return true
}

// fail records a failed reply.
func (f *Fanout[N]) fail(from N) {
	if f.asked[from] && !f.replied[from] {
		f.failed[from] = true
	}
}

// tooFew reports whether fewer nodes count than the level needs: only a From level
// with N above the number of nodes. Nothing can change that before the timeout
// but a member joining, and the operation does not wait for one.
func (f *Fanout[N]) tooFew() bool { return f.needed > f.known-1 }

// enough reports whether the needed replies have arrived.
func (f *Fanout[N]) enough() bool { return len(f.replied) >= f.needed }

// hopeless reports whether the needed replies can no longer arrive: too few nodes
// are left that have not failed, counting the secondary ones not yet asked.
func (f *Fanout[N]) hopeless() bool {
	return len(f.primary)+len(f.secondary)-len(f.failed) < f.needed
}

// WriteOutcome is where a write stands.
type WriteOutcome uint8

// The outcomes of a write.
const (
	WritePending     WriteOutcome = iota
	WriteSucceeded                // enough replicas have the write: UpdateSuccess
	WriteTimedOut                 // the timeout passed, or too many replicas failed: UpdateTimeout
	WriteStoreFailed              // the local durable store failed: StoreFailure
	WriteTooFew                   // fewer nodes count than the level needs (WriteTo(n)): decided at once
)

// WriteAggregator decides a write with a level other than Local: which nodes to
// send the value to, and when the write has succeeded (needed acknowledgements
// from other nodes, and the local durable store's when the key is durable) or
// failed. The caller has applied the write locally before; a failed write is not
// undone.
type WriteAggregator[N comparable] struct {
	Fanout[N]
	durable     bool // the key is durable: the local store must confirm
	localStored bool
	outcome     WriteOutcome
}

// NewWriteAggregator plans a write. ordered sends in node order instead of a
// shuffle: use it for values with causal deltas, so that the same nodes get
// consecutive writes and their delta sequence numbers stay in step. Send to
// Primary at once, unless the outcome is already decided.
func NewWriteAggregator[N comparable](l Level, peers []Peer[N], cmp func(a, b N) int, ordered bool, rng *rand.Rand, durable bool, now time.Time) *WriteAggregator[N] {
	w := &WriteAggregator[N]{Fanout: NewFanout(l, peers, cmp, ordered, rng, now), durable: durable}
	if w.tooFew() {
		w.outcome = WriteTooFew
	}
	w.decide()
	return w
}

// Outcome returns where the write stands.
func (w *WriteAggregator[N]) Outcome() WriteOutcome { return w.outcome }

func (w *WriteAggregator[N]) decide() {
	if w.outcome != WritePending {
		return
	}
	switch {
	case w.enough() && (!w.durable || w.localStored):
		w.outcome = WriteSucceeded
	case w.hopeless():
		w.outcome = WriteTimedOut
	}
}

// Ack records a node's acknowledgement.
func (w *WriteAggregator[N]) Ack(from N) WriteOutcome {
	w.reply(from)
	w.decide()
	return w.outcome
}

// Nack records a node's refusal (it could not store the write), or a value the
// caller could not send it.
func (w *WriteAggregator[N]) Nack(from N) WriteOutcome {
	w.fail(from)
	w.decide()
	return w.outcome
}

// DeltaNack reports whether to resend the full value to from, which could not
// apply the delta it was sent (a gap in its sequence numbers).
func (w *WriteAggregator[N]) DeltaNack(from N) bool {
	return w.outcome == WritePending && w.Asked(from)
}

// LocalStore records the local durable store's result.
func (w *WriteAggregator[N]) LocalStore(ok bool) WriteOutcome {
	if w.outcome == WritePending {
		if !ok {
			w.outcome = WriteStoreFailed
			return w.outcome
		}
		w.localStored = true
		w.decide()
	}
	return w.outcome
}

// Tick returns the secondary nodes to send to, once timeout/5 has passed, and the
// outcome: WriteTimedOut once the timeout has passed without success.
func (w *WriteAggregator[N]) Tick(now time.Time) ([]N, WriteOutcome) {
	if w.outcome != WritePending {
		return nil, w.outcome
	}
	secondary, timedOut := w.tick(now)
	if timedOut {
		w.outcome = WriteTimedOut
		return nil, w.outcome
	}
	return secondary, w.outcome
}

// ReadOutcome is where a read stands.
type ReadOutcome uint8

// The outcomes of a read.
const (
	ReadPending  ReadOutcome = iota
	ReadDone                 // enough replies: answer with the merged value
	ReadTimedOut             // GetFailure
	ReadTooFew               // fewer nodes count than the level needs (ReadFrom(n)): decided at once
)

// ReadAggregator decides a read with a level other than Local: which nodes to ask,
// and when enough have replied. The caller merges the replies' values; when the
// read is done it writes the merge locally (read repair) before it answers, so
// that a later local read sees at least as much.
type ReadAggregator[N comparable] struct {
	Fanout[N]
	outcome ReadOutcome
}

// NewReadAggregator plans a read. Send to Primary at once, unless the outcome is
// already decided.
func NewReadAggregator[N comparable](l Level, peers []Peer[N], cmp func(a, b N) int, rng *rand.Rand, now time.Time) *ReadAggregator[N] {
	r := &ReadAggregator[N]{Fanout: NewFanout(l, peers, cmp, false, rng, now)}
	if r.tooFew() {
		r.outcome = ReadTooFew
	}
	r.decide()
	return r
}

// Outcome returns where the read stands.
func (r *ReadAggregator[N]) Outcome() ReadOutcome { return r.outcome }

func (r *ReadAggregator[N]) decide() {
	if r.outcome != ReadPending {
		return
	}
	switch {
	case r.enough():
		r.outcome = ReadDone
	case r.hopeless():
		r.outcome = ReadTimedOut
	}
}

// Accepts reports whether a reply from from counts: the read is pending and from
// was asked and has not answered. Merge its value only then.
func (r *ReadAggregator[N]) Accepts(from N) bool {
	return r.outcome == ReadPending && r.Asked(from)
}

// Reply records a node's answer, whose value (if any) the caller has merged.
func (r *ReadAggregator[N]) Reply(from N) ReadOutcome {
	if r.outcome == ReadPending {
		r.reply(from)
		r.decide()
	}
	return r.outcome
}

// Fail records a node's answer that could not be used (a value of another type,
// undecodable data).
func (r *ReadAggregator[N]) Fail(from N) ReadOutcome {
	if r.outcome == ReadPending {
		r.fail(from)
		r.decide()
	}
	return r.outcome
}

// Tick returns the secondary nodes to ask, once timeout/5 has passed, and the
// outcome: ReadTimedOut once the timeout has passed without enough replies.
func (r *ReadAggregator[N]) Tick(now time.Time) ([]N, ReadOutcome) {
	if r.outcome != ReadPending {
		return nil, r.outcome
	}
	secondary, timedOut := r.tick(now)
	if timedOut {
		r.outcome = ReadTimedOut
		return nil, r.outcome
	}
	return secondary, r.outcome
}
