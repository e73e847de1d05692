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

// BenchmarkCodec is what a transport does per message: Append on the sending side,
// Decode on the receiving side, one Codec each (a 100-byte flat message).
func BenchmarkCodec(b *testing.B) {
	r := serialization.NewRegistry()
	if err := serialization.Register[*benchMsg](r, "bench.Msg"); err != nil {
		b.Fatal(err)
	}
	m := &benchMsg{Seq: 1, Body: make([]byte, 100)}
	b.Run("Append", func(b *testing.B) {
		c := r.NewCodec(nil)
		buf := make([]byte, 0, 512)
		b.ReportAllocs()
		for b.Loop() {
			_, buf, _ = c.Append(buf[:0], m)
		}
	})
	b.Run("Decode", func(b *testing.B) {
		c := r.NewCodec(nil)
		manifest, data, err := c.Append(nil, m)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Decode(manifest, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
