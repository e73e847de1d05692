package singleton

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{Props: testConfig().Props}.WithDefaults()
	if c.Name != "singleton" || c.TerminationMessage != (actor.PoisonPill{}) || c.HandOverRetryInterval != time.Second ||
		c.MinHandOverRetries != 15 || c.BufferSize != 10000 || c.Lease != nil {
		t.Fatalf("defaults: %+v", c)
	}
	p := ProxyConfig{}.WithDefaults()
	if p.Name != "singleton" || p.BufferSize != 1000 || p.IdentificationInterval != time.Second {
		t.Fatalf("proxy defaults: %+v", p)
	}
	if (ProxyConfig{BufferSize: -1}).WithDefaults().capacity() != 0 {
		t.Fatal("a negative buffer size means no buffer")
	}
}

func TestConfigValidate(t *testing.T) {
	props := testConfig().Props
	bad := []Config{
		{},
		{Props: &actor.Props{}},
		{Props: props, Name: "a/b"},
		{Props: props, Name: strings.Repeat("a", 101)},
		{Props: props, HandOverRetryInterval: -1},
		{Props: props, MinHandOverRetries: -1},
		{Props: props, BufferSize: -1},
	}
	for _, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := (Config{Props: props, Name: "orders-1.v2"}).Validate(); err != nil {
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
	msgs := []any{
		e,
		HandOverToMe{From: node(1)},
		HandOverInProgress{From: node(1)},
		HandOverDone{From: node(1), Final: true, Next: []ProxyNext{{Proxy: proxyOn(5), Next: 7}},
			Ordered: []Envelope{e}, Held: []Envelope{e}},
		TakeOverFromMe{From: node(1)},
		Relay{From: node(1), Final: true, Ordered: []Envelope{e}},
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
