package singletoncore

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/serialization"
)

func TestConfigDefaults(t *testing.T) {
	c := ManagerConfig{}.withDefaults()
	if c.Name != "singleton" || c.HandOverRetryInterval != time.Second || c.MinHandOverRetries != 15 ||
		c.BufferSize != 10000 || c.UseLease {
		t.Fatalf("defaults: %+v", c)
	}
	p := ProxyConfig{}.withDefaults()
	if p.Name != "singleton" || p.BufferSize != 1000 || p.IdentificationInterval != time.Second {
		t.Fatalf("proxy defaults: %+v", p)
	}
	if (ProxyConfig{BufferSize: -1}).withDefaults().capacity() != 0 {
		t.Fatal("a negative buffer size means no buffer")
	}
}

func TestConfigValidate(t *testing.T) {
	bad := []ManagerConfig{
		{Name: "a/b"},
		{Name: strings.Repeat("a", 101)},
		{HandOverRetryInterval: -1},
		{MinHandOverRetries: -1},
		{BufferSize: -1},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := (ManagerConfig{Name: "orders-1.v2"}).Validate(); err != nil {
		t.Error(err)
	}
	for _, c := range []ProxyConfig{{BufferSize: 10001}, {IdentificationInterval: -1}, {Name: "a b"}} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []ProxyConfig{{}, {BufferSize: -1}, {BufferSize: 10000}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// Every message managers and proxies exchange survives the wire.
func TestMessagesRoundTrip(t *testing.T) {
	r := serialization.NewRegistry() // knows them without registration
	e := env(5, 7, 6, 1)
	traced := env(5, 8, 6, 1)
	traced.Payload.Trace = []byte{1, 2, 3} // the core only carries it
	msgs := []any{
		e,
		HandOverToMe{From: node(1), To: node(2)},
		HandOverInProgress{From: node(1)},
		HandOverDone{From: node(1), Final: true, Next: []ProxyNext{{Proxy: proxyOn(5), Next: 7}},
			Ordered: []Envelope{e, traced}, Held: []Envelope{traced, e}},
		TakeOverFromMe{From: node(1)},
		Relay{From: node(1), Final: true, Ordered: []Envelope{e, traced}},
		HandOverComplete{From: node(2)},
		Identify{Proxy: proxyOn(5)},
		IdentifyAck{From: node(1), Accepting: true},
		Detach{Proxy: proxyOn(5)},
	}
	for _, m := range msgs {
		manifest, data, err := r.Marshal(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		back, err := r.Unmarshal(manifest, data)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if !reflect.DeepEqual(back, m) {
			t.Errorf("%T: got %+v, want %+v", m, back, m)
		}
		if _, ok := back.(Event); !ok {
			t.Errorf("%T is not an Event", back)
		}
	}
}

// A payload without a trace encodes as it did before payloads carried traces: no
// Trace key, so a manager of a version before them reads a hand-over's messages as
// ever (and one with a trace ignores the key it does not know).
func TestUntracedPayloadHasNoTraceKey(t *testing.T) {
	r := serialization.NewRegistry()
	e := env(5, 7, 6, 1)
	_, data, err := r.Marshal(HandOverDone{From: node(1), Ordered: []Envelope{e}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "Trace") {
		t.Fatalf("an untraced payload's encoding names Trace: %q", data)
	}
	e.Payload.Trace = []byte{1}
	if _, data, err = r.Marshal(HandOverDone{From: node(1), Ordered: []Envelope{e}}); err != nil || !strings.Contains(string(data), "Trace") {
		t.Fatalf("a traced payload's encoding: %q, %v", data, err)
	}
}
