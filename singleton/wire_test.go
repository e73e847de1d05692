package singleton

import (
	"errors"
	"reflect"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/serialization"
)

// A post survives the registry's encoding, and what is not a post is refused.
func TestPostRoundTrip(t *testing.T) {
	reg := serialization.NewRegistry() // knows post without registration
	e := core.Envelope{
		Proxy: core.ProxyID{Node: cluster.UniqueAddress{Addr: "troupe://a@10.0.0.1:2552", UID: 7}, Path: "/system/singleton-proxy/x-1#9"},
		Seq:   12, After: 10, Prev: cluster.UniqueAddress{Addr: "troupe://b@10.0.0.2:2552", UID: 8},
		Payload: core.Payload{Manifest: "test.Msg", Data: []byte{1, 2, 3}},
	}
	manifest, data, err := reg.Marshal(toPost(e))
	if err != nil {
		t.Fatal(err)
	}
	if manifest != postName {
		t.Fatalf("manifest %q", manifest)
	}
	back, err := reg.Unmarshal(manifest, data)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := back.(post)
	if !ok {
		t.Fatalf("decoded %T", back)
	}
	if got := p.envelope(e.Payload.Sender); !reflect.DeepEqual(got, e) {
		t.Fatalf("got %+v, want %+v", got, e)
	}
	for _, bad := range [][]byte{{0x90}, {0x93, 1, 2, 3}, {0xa1, 'x'}, append([]byte{0x99, 0xa1, 'a'}, data[2:5]...)} {
		if _, err := reg.Unmarshal(manifest, bad); !errors.Is(err, serialization.ErrDecode) {
			t.Errorf("% x: %v", bad, err)
		}
	}
}

// A post carries its payload's trace in a tenth element, only when it has one; a
// trace that is not one is refused.
func TestPostTrace(t *testing.T) {
	reg := serialization.NewRegistry()
	e := core.Envelope{
		Proxy: core.ProxyID{Node: cluster.UniqueAddress{Addr: "troupe://a@10.0.0.1:2552", UID: 7}, Path: "/system/singleton-proxy/x-1#9"},
		Seq:   3, Payload: core.Payload{Manifest: "test.Msg", Data: []byte{1}},
	}
	traced := e
	traced.Payload.Trace = testTrace(t, 5)
	for _, c := range []struct {
		e      core.Envelope
		fields byte
	}{{e, postFields}, {traced, postFields + 1}} {
		_, data, err := reg.Marshal(toPost(c.e))
		if err != nil {
			t.Fatal(err)
		}
		if data[0] != 0x90|c.fields {
			t.Fatalf("the encoding starts with %#x, want an array of %d", data[0], c.fields)
		}
		back, err := reg.Unmarshal(postName, data)
		if err != nil {
			t.Fatal(err)
		}
		if p := back.(post); !reflect.DeepEqual(p.envelope(actor.Ref{}), c.e) {
			t.Fatalf("got %+v, want %+v", p.envelope(actor.Ref{}), c.e)
		}
	}
	fields := func(trace any) []byte {
		return encodeFields(t, "troupe://a@h:1", 7, "/p", 3, 0, "", 0, "test.Msg", []byte{1}, trace)
	}
	good := testTrace(t, 5)
	for what, trace := range map[string]any{
		"a string":          "x",
		"cut short":         good[:tracewire.MinLen-1],
		"trailing bytes":    append(append([]byte(nil), good...), 0),
		"zero ids":          make([]byte, tracewire.MinLen),
		"empty":             []byte{},
		"a number":          7,
		"tracestate beyond": append(append([]byte(nil), good[:tracewire.MinLen-1]...), 4, 'a'),
	} {
		if _, err := reg.Unmarshal(postName, fields(trace)); !errors.Is(err, serialization.ErrDecode) {
			t.Errorf("%s: %v", what, err)
		}
	}
	for _, trace := range []any{nil, good} {
		back, err := reg.Unmarshal(postName, fields(trace))
		if err != nil {
			t.Fatalf("trace %v: %v", trace, err)
		}
		if got := back.(post).trace; (got != nil) != (trace != nil) {
			t.Fatalf("trace %v: decoded % x", trace, got)
		}
	}
}
