package sharding

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/vmihailenco/msgpack/v5"
	"go.opentelemetry.io/otel/trace"
)

// marshalDelivery encodes m as the transport does, through a registry (which knows
// msgDelivery without registration).
func marshalDelivery(tb testing.TB, reg *serialization.Registry, m *msgDelivery) []byte {
	tb.Helper()
	manifest, data, err := reg.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	if manifest != deliveryName {
		tb.Fatalf("manifest %q, want %q", manifest, deliveryName)
	}
	return data
}

// unmarshalDelivery decodes data as the transport does, with ctx as the context.
func unmarshalDelivery(reg *serialization.Registry, data []byte, ctx any) (*msgDelivery, error) {
	v, err := reg.UnmarshalContext(deliveryName, data, ctx)
	if err != nil {
		return nil, err
	}
	return v.(*msgDelivery), nil
}

// decodeDirect runs DecodeMsgpack on data with a plain decoder (no context, none of
// the registry's checks) and reports whether it consumed all of data.
func decodeDirect(data []byte) (*msgDelivery, bool, error) {
	r := bytes.NewReader(data)
	var m msgDelivery
	err := m.DecodeMsgpack(msgpack.NewDecoder(r))
	return &m, r.Len() == 0, err
}

// sameDelivery reports whether a and b carry the same fields (Payload compared by
// content: nil and empty are the same payload).
func sameDelivery(a, b *msgDelivery) bool {
	return a.Shard == b.Shard && a.Entity == b.Entity && a.Start == b.Start &&
		a.HandOver == b.HandOver && a.Sender == b.Sender && a.Manifest == b.Manifest &&
		bytes.Equal(a.Payload, b.Payload) && a.local == nil && b.local == nil &&
		(a.Trace == nil) == (b.Trace == nil) && (a.Trace == nil || a.Trace.Equal(b.Trace.WithRemote(a.Trace.IsRemote())))
}

// testTrace is a valid trace context.
var testTrace = func() *trace.SpanContext {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true})
	return &sc
}()

// A msgDelivery survives the transport's encoding with each combination of fields, as
// a compact array under the current name.
func TestWireDeliveryRoundTrip(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	reg := serialization.NewRegistry()
	res := refResolver{sys}
	for _, tc := range []struct {
		name string
		m    msgDelivery
	}{
		{"forward, zero sender", msgDelivery{Shard: "7", Entity: "e-1", Manifest: "test.Msg", Payload: []byte{1, 2, 3}}},
		{"hand-over with sender", msgDelivery{Shard: "7", Entity: "e-1", HandOver: true, Sender: probe.Ref(), Manifest: "test.Msg", Payload: []byte("hello")}},
		{"start", msgDelivery{Shard: "s", Entity: "e", Start: true}},
		{"start in a hand-over", msgDelivery{Shard: "s", Entity: "e", Start: true, HandOver: true, Sender: probe.Ref()}},
		{"hand-over, zero sender", msgDelivery{Shard: "s", Entity: "e", HandOver: true, Manifest: "m", Payload: []byte{0}}},
		{"nil payload", msgDelivery{Shard: "s", Entity: "e", Manifest: "m"}},
		{"empty payload", msgDelivery{Shard: "s", Entity: "e", Manifest: "m", Payload: []byte{}}},
		{"large payload", msgDelivery{Shard: "s", Entity: "e", Manifest: "m", Payload: bytes.Repeat([]byte{0xc1}, 70000)}},
		{"empty IDs and manifest", msgDelivery{}},
		{"non-ASCII IDs", msgDelivery{Shard: "ß", Entity: "entité/β", Manifest: "x.Y.v1", Payload: []byte{0xff}}},
		{"traced", msgDelivery{Shard: "s", Entity: "e", Manifest: "m", Payload: []byte{1}, Trace: testTrace}},
		{"traced hand-over", msgDelivery{Shard: "s", Entity: "e", HandOver: true, Sender: probe.Ref(), Manifest: "m", Trace: testTrace}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := marshalDelivery(t, reg, &tc.m)
			fields := deliveryFields
			if tc.m.Trace != nil {
				fields++ // only then
			}
			if data[0] != 0x90|byte(fields) {
				t.Fatalf("encoding starts with %#x, want an array of %d", data[0], fields)
			}
			got, err := unmarshalDelivery(reg, data, res)
			if err != nil {
				t.Fatal(err)
			}
			if !sameDelivery(got, &tc.m) {
				t.Fatalf("got %+v, want %+v", got, tc.m)
			}
			if tc.m.Sender.IsZero() {
				// The zero sender needs no resolver.
				if got, err := unmarshalDelivery(reg, data, nil); err != nil || !sameDelivery(got, &tc.m) {
					t.Fatalf("without a resolver: %+v, %v", got, err)
				}
			}
			// A value encodes as its pointer does.
			if _, v, err := reg.Marshal(tc.m); err != nil || !bytes.Equal(v, data) {
				t.Fatalf("value encoding % x, %v; pointer % x", v, err, data)
			}
		})
	}
}

// The message carried within one system is never encoded.
func TestWireDeliveryLocalIsNotEncoded(t *testing.T) {
	reg := serialization.NewRegistry()
	m := msgDelivery{Shard: "s", Entity: "e", Manifest: "m", Payload: []byte{1}}
	want := marshalDelivery(t, reg, &m)
	m.local = struct{ secret string }{"not for the wire"}
	if got := marshalDelivery(t, reg, &m); !bytes.Equal(got, want) {
		t.Fatalf("with local: % x, without: % x", got, want)
	}
	got, err := unmarshalDelivery(reg, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.local != nil {
		t.Fatalf("decoded local %v", got.local)
	}
}

// A sender decodes as serialization decodes any actor.Ref: the same errors without a
// resolver and for an over-long path, and the resolver's error for an unknown one.
func TestWireDeliverySenderErrors(t *testing.T) {
	sys := testkit.NewSystem(t)
	probe := testkit.NewProbe(t, sys)
	reg := serialization.NewRegistry()
	data := marshalDelivery(t, reg, &msgDelivery{Shard: "s", Entity: "e", HandOver: true, Sender: probe.Ref()})

	// What serialization's codec for a Ref says on its own without a resolver.
	b, err := msgpack.Marshal(probe.Ref().URI())
	if err != nil {
		t.Fatal(err)
	}
	var ref actor.Ref
	wantNoResolver := msgpack.Unmarshal(b, &ref)
	if wantNoResolver == nil {
		t.Fatal("a Ref decoded without a resolver")
	}
	_, err = unmarshalDelivery(reg, data, nil)
	if !errors.Is(err, serialization.ErrDecode) || !errors.Is(err, errMalformedDelivery) ||
		!strings.HasSuffix(err.Error(), "sender: "+wantNoResolver.Error()) {
		t.Fatalf("without a resolver: %v, want ErrDecode with %q", err, wantNoResolver)
	}

	long := probe.Ref().URI() + strings.Repeat("x", 5000)
	_, err = unmarshalDelivery(reg, marshalDeliveryRaw(t, "s", "e", false, true, long, "", nil), refResolver{sys})
	if want := fmt.Sprintf("sender: actor path of %d bytes", len(long)); !errors.Is(err, serialization.ErrDecode) || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("an over-long sender: %v, want %q", err, want)
	}

	unknown := marshalDeliveryRaw(t, "s", "e", false, true, "troupe://nowhere@10.9.9.9:1/user/x", "", nil)
	if _, err := unmarshalDelivery(reg, unknown, refResolver{sys}); !errors.Is(err, actor.ErrNotFound) || !errors.Is(err, serialization.ErrDecode) {
		t.Fatalf("a sender the system cannot resolve: %v, want ErrNotFound", err)
	}
}

// marshalDeliveryRaw writes the fields of a msgDelivery with the sender as any string,
// followed by extra elements.
func marshalDeliveryRaw(tb testing.TB, shard, entity string, start, handOver bool, sender, manifest string, payload []byte, extra ...any) []byte {
	tb.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	vals := append([]any{shard, entity, start, handOver, sender, manifest, payload}, extra...)
	if err := enc.EncodeArrayLen(len(vals)); err != nil {
		tb.Fatal(err)
	}
	for _, v := range vals {
		if err := enc.Encode(v); err != nil {
			tb.Fatal(err)
		}
	}
	return buf.Bytes()
}

// Elements a newer version appends are skipped.
func TestWireDeliveryNewerVersion(t *testing.T) {
	reg := serialization.NewRegistry()
	data := marshalDeliveryRaw(t, "s", "e", false, false, "", "m", []byte{9},
		nil, "more", map[string]any{"k": []any{1, 2}}, nil, 3.5) // no trace, then the newer ones
	for _, decode := range []func() (*msgDelivery, error){
		func() (*msgDelivery, error) { return unmarshalDelivery(reg, data, nil) },
		func() (*msgDelivery, error) {
			m, all, err := decodeDirect(data)
			if err == nil && !all {
				t.Error("the extra elements were not consumed")
			}
			return m, err
		},
	} {
		got, err := decode()
		if err != nil {
			t.Fatal(err)
		}
		if want := (msgDelivery{Shard: "s", Entity: "e", Manifest: "m", Payload: []byte{9}}); !sameDelivery(got, &want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
}

// What is not a msgDelivery (truncated, too short, fields of the wrong kind, the old
// map-shaped encoding) is refused with an error wrapping errMalformedDelivery, and the
// destination is left alone.
func TestWireDeliveryMalformed(t *testing.T) {
	reg := serialization.NewRegistry()
	valid := marshalDelivery(t, reg, &msgDelivery{Shard: "shard-1", Entity: "e", Manifest: "m", Payload: []byte{1, 2}})
	old, err := msgpack.Marshal(map[string]any{"shard": "s", "entity": "e", "sender": "", "manifest": "m", "payload": []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"empty input":         {},
		"nil":                 {0xc0},
		"empty array":         {0x90},
		"six elements":        {0x96, 0xa1, 's', 0xa1, 'e', 0xc2, 0xc2, 0xa0, 0xa0},
		"string":              {0xa1, 'x'},
		"map (v1)":            old,
		"shard is an integer": {0x97, 0x01, 0xa1, 'e', 0xc2, 0xc2, 0xa0, 0xa0, 0xc0},
		"start is a string":   {0x97, 0xa1, 's', 0xa1, 'e', 0xa1, 't', 0xc2, 0xa0, 0xa0, 0xc0},
		"sender is an array":  {0x97, 0xa1, 's', 0xa1, 'e', 0xc2, 0xc2, 0x91, 0x01, 0xa0, 0xc0},
		"sender is an int":    {0x97, 0xa1, 's', 0xa1, 'e', 0xc2, 0xc2, 0x05, 0xa0, 0xc0},
		"payload is a map":    {0x97, 0xa1, 's', 0xa1, 'e', 0xc2, 0xc2, 0xa0, 0xa0, 0x80},
		"string overruns":     {0x97, 0xdb, 0xff, 0xff, 0xff, 0xff, 's'},
		"bytes overrun":       {0x97, 0xa1, 's', 0xa1, 'e', 0xc2, 0xc2, 0xa0, 0xa0, 0xc6, 0x7f, 0xff, 0xff, 0xff},
		"huge array":          append([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, valid[1:]...),
		"unknown code":        {0x97, 0xc1},
		"trace is a string":   {0x98, 0xa1, 's', 0xa1, 'e', 0xc2, 0xc2, 0xa0, 0xa0, 0xc0, 0xa1, 'x'},
		"trace too short":     {0x98, 0xa1, 's', 0xa1, 'e', 0xc2, 0xc2, 0xa0, 0xa0, 0xc0, 0xc4, 0x01, 0x00},
		"trace of zero ids":   append([]byte{0x98, 0xa1, 's', 0xa1, 'e', 0xc2, 0xc2, 0xa0, 0xa0, 0xc0, 0xc4, 26}, make([]byte, 26)...),
	}
	for i := range len(valid) {
		bad[fmt.Sprintf("truncated to %d bytes", i)] = valid[:i]
	}
	for name, data := range bad {
		t.Run(name, func(t *testing.T) {
			m := msgDelivery{Shard: "untouched"}
			r := bytes.NewReader(data)
			err := m.DecodeMsgpack(msgpack.NewDecoder(r))
			if !errors.Is(err, errMalformedDelivery) {
				t.Fatalf("direct decoding of % x: %v, want errMalformedDelivery", data, err)
			}
			if m.Shard != "untouched" {
				t.Fatalf("destination changed to %+v", m)
			}
			if name == "nil" {
				return // msgpack makes nil the zero value without asking DecodeMsgpack
			}
			if _, err := unmarshalDelivery(reg, data, nil); !errors.Is(err, serialization.ErrDecode) {
				t.Fatalf("registry decoding of % x: %v, want ErrDecode", data, err)
			}
		})
	}
}

// FuzzMsgDeliveryDecode feeds arbitrary bytes to msgDelivery's decoder, directly and
// through a registry with a resolver. It must never panic; every error must wrap
// errMalformedDelivery (directly) or serialization.ErrDecode (through the registry);
// whatever decodes must encode and decode again to the same delivery.
func FuzzMsgDeliveryDecode(f *testing.F) {
	sys := testkit.NewSystem(f)
	probe := testkit.NewProbe(f, sys)
	reg := serialization.NewRegistry()
	res := refResolver{sys}
	for _, m := range []*msgDelivery{
		{Shard: "7", Entity: "e-1", Manifest: "test.Msg", Payload: []byte{1, 2, 3}},
		{Shard: "7", Entity: "e-1", HandOver: true, Sender: probe.Ref(), Manifest: "m", Payload: []byte("x")},
		{Shard: "s", Entity: "e", Start: true},
		{Shard: "s", Entity: "e", Manifest: "m", Payload: []byte{}},
		{},
	} {
		f.Add(marshalDelivery(f, reg, m))
	}
	f.Add(marshalDeliveryRaw(f, "s", "e", true, false, "", "m", []byte{1}, "extra", 1))
	f.Add(marshalDeliveryRaw(f, "s", "e", false, true, "troupe://x@y:1/user/z", "", nil))
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xc0})

	f.Fuzz(func(t *testing.T, data []byte) {
		m, _, err := decodeDirect(data)
		if err != nil && !errors.Is(err, errMalformedDelivery) {
			t.Fatalf("direct: %v does not wrap errMalformedDelivery", err)
		}
		if err == nil {
			again, _, err := decodeDirect(marshalDelivery(t, reg, m))
			if err != nil || !sameDelivery(again, m) {
				t.Fatalf("re-decoding %+v: %+v, %v", m, again, err)
			}
		}
		got, err := unmarshalDelivery(reg, data, res)
		if err != nil {
			if !errors.Is(err, serialization.ErrDecode) {
				t.Fatalf("registry: %v does not wrap ErrDecode", err)
			}
			return
		}
		again, err := unmarshalDelivery(reg, marshalDelivery(t, reg, got), res)
		if err != nil || !sameDelivery(again, got) {
			t.Fatalf("re-decoding %+v: %+v, %v", got, again, err)
		}
	})
}

// BenchmarkWireDelivery measures a forward's delivery through a serialization.Codec,
// as the remote transport encodes and decodes it.
func BenchmarkWireDelivery(b *testing.B) {
	reg := serialization.NewRegistry()
	m := &msgDelivery{Shard: "42", Entity: "entity-4711", Manifest: "bench.Msg", Payload: make([]byte, 100)}
	b.Run("encode", func(b *testing.B) {
		c := reg.NewCodec(nil)
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if _, buf, err = c.Append(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		c := reg.NewCodec(nil)
		manifest, data, err := reg.Marshal(m)
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
