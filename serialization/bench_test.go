package serialization_test

import (
	"testing"

	"github.com/troupe-go/troupe/serialization"
)

type benchEvent struct {
	ID     string `msgpack:"id"`
	Amount int64  `msgpack:"amount"`
	Note   string `msgpack:"note"`
}

func benchRegistry(b *testing.B) *serialization.Registry {
	r := serialization.NewRegistry()
	if err := serialization.Register[*benchEvent](r, "bench.Event"); err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkMarshal(b *testing.B) {
	r := benchRegistry(b)
	ev := &benchEvent{ID: "order-123", Amount: 4200, Note: "a note of moderate length"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, err := r.Marshal(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkUnmarshal(b *testing.B) {
	r := benchRegistry(b)
	m, data, err := r.Marshal(&benchEvent{ID: "order-123", Amount: 4200, Note: "a note of moderate length"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := r.Unmarshal(m, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
