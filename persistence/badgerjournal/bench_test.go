package badgerjournal

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// BenchmarkGroupCommit: 1,000 concurrent writers, each with its own
// persistence id, each writing one 100-byte event per call and waiting for
// it, with the default durability (a sync per batch). b.N is the total
// number of events.
func BenchmarkGroupCommit(b *testing.B) {
	for _, d := range []Durability{SyncEachBatch, NoSync} {
		b.Run(d.String(), func(b *testing.B) {
			benchmarkWriters(b, 1000, d)
		})
	}
}

func benchmarkWriters(b *testing.B, writers int, d Durability) {
	s, err := Open(context.Background(), Config{Dir: b.TempDir(), Durability: d, MemTableSize: benchMemTable})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	payload := make([]byte, 100)
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := fmt.Sprintf("bench-%d", g)
			w := []persistence.AtomicWrite{{PersistenceID: pid, Events: []persistence.Record{
				{PersistenceID: pid, Manifest: "bench.Event", Payload: payload},
			}}}
			for seq := uint64(1); next.Add(1) <= int64(b.N); seq++ {
				w[0].Events[0].SequenceNr = seq
				results, err := s.WriteMessages(ctx, w)
				if err == nil {
					err = results[0]
				}
				if err != nil {
					failed.Store(&err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/float64(s.w.commits.Load()), "events/txn")
}

// BenchmarkWriteLatency: one writer persisting 100-byte events one at a
// time, each synced, as an entity's persist-then-handler loop does.
func BenchmarkWriteLatency(b *testing.B) {
	s, err := Open(context.Background(), Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	w := []persistence.AtomicWrite{{PersistenceID: "latency", Events: []persistence.Record{
		{PersistenceID: "latency", Manifest: "bench.Event", Payload: make([]byte, 100)},
	}}}
	lat := make([]time.Duration, 0, b.N)
	seq := uint64(0)
	b.ResetTimer()
	for b.Loop() {
		seq++
		w[0].Events[0].SequenceNr = seq
		start := time.Now()
		results, err := s.WriteMessages(ctx, w)
		if err == nil {
			err = results[0]
		}
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkReplay: replay of 1,000,000 events of one persistence id, 100
// bytes each. One iteration is one full replay.
func BenchmarkReplay(b *testing.B) {
	const total = 1_000_000
	s, err := Open(context.Background(), Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	payload := make([]byte, 100)
	for from := uint64(1); from <= total; from += 1000 {
		w := persistence.AtomicWrite{PersistenceID: "replay"}
		for seq := from; seq < from+1000; seq++ {
			w.Events = append(w.Events, persistence.Record{PersistenceID: "replay", SequenceNr: seq, Manifest: "bench.Event", Payload: payload})
		}
		results, err := s.WriteMessages(ctx, []persistence.AtomicWrite{w})
		if err == nil {
			err = results[0]
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var n int
		err := s.ReplayMessages(ctx, "replay", 1, persistence.MaxSequenceNr, 0, func(persistence.Record) error {
			n++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if n != total {
			b.Fatalf("replayed %d events, want %d", n, total)
		}
	}
	b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

var benchMemTable int64 = 64 << 20
