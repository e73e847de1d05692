package persistence

import (
	"context"
	"sync"
	"time"
)

// batchQueue is the protocol of the batcher, which merges the writes of all entities
// of a system into few journal calls, as Akka's journal actor does: whatever is queued
// when a call starts goes into that call, and up to maxCalls calls run at once, so that
// one call's sync overlaps the packing of the next. It holds no goroutine and no lock:
// the batcher (or a simulator) tells it that a job was submitted or that a call loop
// is ready for more, and it says whether to start a call loop and what the next call
// carries. O identifies the owner of a job, who gets its results.
type batchQueue[O any] struct {
	maxCalls int
	queue    []writeJob[O]
	calls    int // call loops running
}

// writeJob is one entity's writes (one entity has at most one job queued or in
// flight, so its events stay in order) and the owner waiting for the results.
type writeJob[O any] struct {
	id     uint64 // the owner's id of the call
	writes []AtomicWrite
	owner  O
	at     time.Time // when the job was submitted, with metrics on
}

// jobResult is the answer for one job: a result per atomic write, or the failure of
// the whole call.
type jobResult[O any] struct {
	owner   O
	id      uint64
	results []error
	err     error
}

// submit queues j and reports whether the caller must start a call loop (fewer than
// maxCalls are running).
func (q *batchQueue[O]) submit(j writeJob[O]) (startLoop bool) {
	q.queue = append(q.queue, j)
	if q.calls < q.maxCalls {
		q.calls++
		return true
	}
	return false
}

// take is called by a call loop that is ready for its next call. It returns every job
// queued, and the writes of the call (the jobs' writes in order, appended to buf), or
// ok false when nothing is queued: the loop then ends.
func (q *batchQueue[O]) take(buf []AtomicWrite) (jobs []writeJob[O], writes []AtomicWrite, ok bool) {
	if len(q.queue) == 0 {
		q.calls--
		return nil, buf, false
	}
	jobs, q.queue = q.queue, nil
	for _, j := range jobs {
		buf = append(buf, j.writes...)
	}
	return jobs, buf, true
}

// split hands the answer of one call to its jobs: each gets the results of its own
// writes, or the call's error. A journal that returned the wrong number of results
// fails every job with errShortResults.
func split[O any](jobs []writeJob[O], results []error, err error) []jobResult[O] {
	n := 0
	for _, j := range jobs {
		n += len(j.writes)
	}
	if err == nil && len(results) != n {
		err = errShortResults
	}
	out := make([]jobResult[O], len(jobs))
	i := 0
	for k, j := range jobs {
		out[k] = jobResult[O]{owner: j.owner, id: j.id, err: err}
		if err == nil {
			out[k].results = results[i : i+len(j.writes) : i+len(j.writes)]
		}
		i += len(j.writes)
	}
	return out
}

// maxCalls bounds the journal calls in flight. Calls wait in the journal while
// their group commit is written; with few of them, writes that arrive meanwhile
// wait here and miss the transaction the journal is packing, which splits the
// entities into more, smaller commits. Sixteen keep the queue here short (with 1,000
// entities writing, 467 instead of 365 events per commit on the reference machine).
const maxCalls = 16

// batcher runs batchQueue: call loops on goroutines of their own make the journal
// calls, each bounded by the journal's call timeout and circuit breaker.
//
// A call that fails as a whole, times out or is refused by the breaker fails every
// entity in it; each of them stops, as after any write failure, because the outcome
// of its write is unknown.
type batcher struct {
	p *Persistence

	mu sync.Mutex
	q  batchQueue[*runner]
}

func newBatcher(p *Persistence) *batcher {
	return &batcher{p: p, q: batchQueue[*runner]{maxCalls: maxCalls}}
}

func (b *batcher) submit(j writeJob[*runner]) {
	b.mu.Lock()
	start := b.q.submit(j)
	b.mu.Unlock()
	if start {
		go b.loop()
	}
}

// loop makes journal calls while writes are queued, then exits.
func (b *batcher) loop() {
	var buf []AtomicWrite
	for {
		b.mu.Lock()
		jobs, writes, ok := b.q.take(buf[:0])
		b.mu.Unlock()
		if !ok {
			return
		}
		results, abandoned, err := b.p.calls.write(context.Background(), writes, func() {
			for _, j := range jobs {
				b.p.writeFinished(j.owner.pid)
			}
		})
		if m := b.p.metrics; m != nil {
			m.callDone(jobs, writes)
		}
		for _, r := range split(jobs, results, err) {
			r.owner.written(r.id, r.results, r.err)
		}
		if abandoned {
			buf = nil // the plug-in may still read the slice
		} else {
			clear(writes)
			buf = writes
		}
	}
}
