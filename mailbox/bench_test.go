package mailbox

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// envelope is shaped like the actor runtime's message envelope: pointers that the
// garbage collector must see, 24 bytes in all.
type envelope struct {
	msg    any
	sender *int
}

// parker lets a consumer goroutine block while its queue is empty and a producer wake
// it, as a channel receiver blocks and a sender wakes it. The actor runtime does the
// same with its scheduled flag, so this is the like-for-like comparison with a channel.
type parker struct {
	sleeping atomic.Bool
	wake     chan struct{}
}

func newParker() *parker { return &parker{wake: make(chan struct{}, 1)} }

// notify is called by the producer after each Push.
func (p *parker) notify() {
	if p.sleeping.Load() && p.sleeping.CompareAndSwap(true, false) {
		p.wake <- struct{}{}
	}
}

// park is called by the consumer when Pop found nothing. The store of sleeping before
// the second look, and the producer's Push before its load of sleeping, mean that
// either the consumer sees the element or the producer sees it sleeping.
func (p *parker) park(empty func() bool) {
	p.sleeping.Store(true)
	if !empty() && p.sleeping.CompareAndSwap(true, false) {
		return
	}
	<-p.wake
}

// spsc streams b.N elements from a producer goroutine to the calling goroutine through
// a Queue; the consumer blocks when the queue is empty.
func spsc[T any](b *testing.B, v T) {
	var q Queue[T]
	p := newParker()
	b.ReportAllocs()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range b.N {
			q.Push(v)
			p.notify()
		}
	}()
	for n := 0; n < b.N; {
		if _, ok := q.Pop(); !ok {
			p.park(q.Empty)
			continue
		}
		n++
	}
	<-done
}

// chanSPSC is spsc through a channel with a buffer of 1024.
func chanSPSC[T any](b *testing.B, v T) {
	ch := make(chan T, 1024)
	b.ReportAllocs()
	go func() {
		for range b.N {
			ch <- v
		}
		close(ch)
	}()
	for range ch {
	}
}

// BenchmarkQueuePushPop pushes and pops on one goroutine: the cost of the two calls
// without contention, and the case rewinding is for (it must not allocate).
func BenchmarkQueuePushPop(b *testing.B) {
	var q Queue[int]
	b.ReportAllocs()
	for i := range b.N {
		q.Push(i)
		if _, ok := q.Pop(); !ok {
			b.Fatal("Pop found nothing after Push")
		}
	}
}

// BenchmarkChannelPushPop is BenchmarkQueuePushPop with a buffered channel.
func BenchmarkChannelPushPop(b *testing.B) {
	ch := make(chan int, 1024)
	b.ReportAllocs()
	for i := range b.N {
		ch <- i
		<-ch
	}
}

// BenchmarkQueueSPSC streams ints from one producer goroutine to one consumer
// goroutine, which blocks when the queue is empty. While the producer is ahead at a
// segment's end it allocates a new segment, which B/op shows (one allocation per 256
// elements rounds to 0 allocs/op).
func BenchmarkQueueSPSC(b *testing.B) { spsc(b, 1) }

// BenchmarkChannelSPSC is BenchmarkQueueSPSC through a channel with a buffer of 1024.
func BenchmarkChannelSPSC(b *testing.B) { chanSPSC(b, 1) }

// BenchmarkQueueSPSCEnvelope is BenchmarkQueueSPSC with envelope-shaped elements.
func BenchmarkQueueSPSCEnvelope(b *testing.B) {
	x := new(int)
	spsc(b, envelope{msg: x, sender: x})
}

// BenchmarkChannelSPSCEnvelope is BenchmarkChannelSPSC with envelope-shaped elements.
func BenchmarkChannelSPSCEnvelope(b *testing.B) {
	x := new(int)
	chanSPSC(b, envelope{msg: x, sender: x})
}

// BenchmarkQueueSPSCPolling is BenchmarkQueueSPSC with a consumer that never blocks: it
// yields and polls again when the queue is empty. It stays close behind the producer,
// so nearly every element costs a cache-line transfer between the cores; it is here to
// show that cost, not as a model of the actor runtime, whose consumer goes idle. Its
// result depends on how the two goroutines settle and is bimodal on a 2-core machine
// (runs of about 35-60 and of about 120-135 ns/op were both seen).
func BenchmarkQueueSPSCPolling(b *testing.B) {
	var q Queue[int]
	b.ReportAllocs()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range b.N {
			q.Push(i)
		}
	}()
	for n := 0; n < b.N; {
		if _, ok := q.Pop(); !ok {
			runtime.Gosched()
			continue
		}
		n++
	}
	<-done
}
