package mailbox

import (
	"runtime"
	"testing"
)

// BenchmarkQueuePushPop pushes and pops on one goroutine: the cost of the two calls
// with no contention, and the case rewinding is for (it must not allocate).
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

// BenchmarkQueueSPSC streams b.N elements from one producer goroutine to one consumer
// goroutine. The consumer spins on Pop and yields when the queue is empty, so the
// figure is throughput per element under cross-core traffic, including any segments
// the producer allocates while it is ahead.
func BenchmarkQueueSPSC(b *testing.B) {
	var q Queue[int]
	b.ReportAllocs()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range b.N {
			q.Push(i)
		}
	}()
	for want := 0; want < b.N; {
		v, ok := q.Pop()
		if !ok {
			runtime.Gosched()
			continue
		}
		if v != want {
			b.Fatalf("popped %d, want %d", v, want)
		}
		want++
	}
	<-done
}

// BenchmarkChannelSPSC is BenchmarkQueueSPSC with a buffered channel of 1024, for
// comparison.
func BenchmarkChannelSPSC(b *testing.B) {
	ch := make(chan int, 1024)
	b.ReportAllocs()
	go func() {
		for i := range b.N {
			ch <- i
		}
		close(ch)
	}()
	want := 0
	for v := range ch {
		if v != want {
			b.Fatalf("received %d, want %d", v, want)
		}
		want++
	}
}

// BenchmarkChannelPushPop is BenchmarkQueuePushPop with a buffered channel, for
// comparison.
func BenchmarkChannelPushPop(b *testing.B) {
	ch := make(chan int, 1024)
	b.ReportAllocs()
	for i := range b.N {
		ch <- i
		<-ch
	}
}
