package singletoncore

import "testing"

// BenchmarkManagerEnvelope feeds a hosting manager one proxy's messages in order.
func BenchmarkManagerEnvelope(b *testing.B) {
	m, err := NewManagerCore(node(1), ManagerConfig{Role: "r"}, 0)
	if err != nil {
		b.Fatal(err)
	}
	feed(m, up(1, 10), up(2, 20))
	e := env(2, 1, 0, 0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e.Seq = uint64(i + 1)
		if ds := m.Handle(e); len(ds) != 1 {
			b.Fatalf("%v", show(ds))
		}
	}
}

// BenchmarkProxySend feeds an identified proxy user messages.
func BenchmarkProxySend(b *testing.B) {
	p, err := NewProxyCore(proxyOn(2), ProxyConfig{Role: "r"})
	if err != nil {
		b.Fatal(err)
	}
	p.Handle(up(1, 10))
	p.Handle(IdentifyAck{From: node(1), Accepting: true})
	s := Send{Payload: Payload{Manifest: "m", Data: []byte("x")}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if ds := p.Handle(s); len(ds) != 1 {
			b.Fatalf("%v", show(ds))
		}
	}
}
