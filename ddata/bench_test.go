package ddata

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/troupe-go/troupe/cluster"
)

// BenchmarkGCounterIncrement is one local increment on the replicator's hot path
// when deltas are taken lazily: the increment in place, and once per propagation
// tick (here every 1024 increments; at 1M updates/s a 200 ms tick sees 200,000) the
// key's delta is taken and numbered for propagation.
func BenchmarkGCounterIncrement(b *testing.B) {
	c := NewGCounter()
	p := newDeltaPropagation(0)
	p.SetNodes([]cluster.UniqueAddress{n2})
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		c.Increment(n1, 1)
		if i++; i%1024 == 0 {
			d, _ := c.TakeDelta()
			p.Update("counter", d)
			p.Collect()
		}
	}
	if c.Value() != uint64(b.N) {
		b.Fatalf("value %d, want %d", c.Value(), b.N)
	}
}

// BenchmarkGCounterIncrementEagerDelta takes and numbers the delta after every
// increment, as Akka's replicator does.
func BenchmarkGCounterIncrementEagerDelta(b *testing.B) {
	c := NewGCounter()
	p := newDeltaPropagation(0)
	p.SetNodes([]cluster.UniqueAddress{n2})
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		c.Increment(n1, 1)
		d, _ := c.TakeDelta()
		p.Update("counter", d)
		if i++; i%1024 == 0 {
			p.Collect()
		}
	}
}

func bigORSet(n int, node int) *ORSet[string] {
	s := NewORSet[string]()
	for i := range n {
		s.Add(testNodes[node], "element-"+strconv.Itoa(i))
	}
	s.TakeDelta()
	return s
}

// BenchmarkORSetAdd100k adds a new element to a set of 100,000 and takes the add's
// delta, then removes the element again and takes that delta (so that the set stays
// at 100,000 and the figure is not a map's growth): one op is an add and a remove.
// It reports the size of one add's encoded delta.
func BenchmarkORSetAdd100k(b *testing.B) {
	reg := testRegistry(b)
	s := bigORSet(100_000, 0)
	names := make([]string, 1024)
	for i := range names {
		names[i] = "new-" + strconv.Itoa(i)
	}
	s.Add(n1, names[0])
	d, _ := s.TakeDelta()
	_, enc, err := reg.Marshal(d)
	if err != nil {
		b.Fatal(err)
	}
	s.Remove(names[0])
	s.TakeDelta()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		e := names[i%len(names)]
		i++
		s.Add(n1, e)
		s.TakeDelta()
		s.Remove(e)
		s.TakeDelta()
	}
	if s.Len() != 100_000 {
		b.Fatalf("set of %d", s.Len())
	}
	b.ReportMetric(float64(len(enc)), "delta-bytes")
}

// BenchmarkORSetMerge100k merges two 100,000-element sets written by different
// nodes (half their elements shared).
func BenchmarkORSetMerge100k(b *testing.B) {
	x := bigORSet(100_000, 0)
	y := NewORSet[string]()
	for i := 50_000; i < 150_000; i++ {
		y.Add(n2, "element-"+strconv.Itoa(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		z := x.Clone()
		b.StartTimer()
		z.Merge(y)
		if z.Len() != 150_000 {
			b.Fatalf("merged %d", z.Len())
		}
	}
}

// BenchmarkORSetMemory100k reports the heap a 100,000-element set holds.
func BenchmarkORSetMemory100k(b *testing.B) {
	var per float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := bigORSet(100_000, 0)
		runtime.GC()
		runtime.ReadMemStats(&after)
		per = float64(after.HeapAlloc-before.HeapAlloc) / 100_000
		runtime.KeepAlive(s)
	}
	b.ReportMetric(per, "B/element")
}

// BenchmarkORSetEncode100k encodes a 100,000-element set (for digests and full-state
// gossip).
func BenchmarkORSetEncode100k(b *testing.B) {
	reg := testRegistry(b)
	s := bigORSet(100_000, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := reg.Marshal(s); err != nil {
			b.Fatal(err)
		}
	}
}
