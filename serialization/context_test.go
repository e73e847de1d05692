package serialization_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
)

// handle is a value whose encoding depends on a context, as an actor reference's does.
type handle struct{ id int }

// table is the context: it turns handles into names and back.
type table map[int]string

type holder struct {
	H handle
	N int
}

func init() {
	msgpack.Register(handle{},
		func(enc *msgpack.Encoder, v reflect.Value) error {
			t, ok := serialization.EncoderContext(enc).(table)
			if !ok {
				return errors.New("no table")
			}
			return enc.EncodeString(t[v.Interface().(handle).id])
		},
		func(dec *msgpack.Decoder, v reflect.Value) error {
			s, err := dec.DecodeString()
			if err != nil {
				return err
			}
			t, ok := serialization.DecoderContext(dec).(table)
			if !ok {
				return errors.New("no table")
			}
			for id, name := range t {
				if name == s {
					v.Set(reflect.ValueOf(handle{id}))
					return nil
				}
			}
			return errors.New("unknown name")
		})
}

func TestContextReachesCustomCodecs(t *testing.T) {
	r := serialization.NewRegistry()
	if err := serialization.Register[holder](r, "test.Holder"); err != nil {
		t.Fatal(err)
	}
	enc := table{7: "seven"}
	prefix := []byte("hdr")
	manifest, out, err := r.AppendMarshal(prefix, holder{H: handle{7}, N: 3}, enc)
	if err != nil || manifest != "test.Holder" || string(out[:3]) != "hdr" {
		t.Fatalf("AppendMarshal = %q %q %v", manifest, out, err)
	}
	got, err := r.UnmarshalContext(manifest, out[3:], table{9: "seven"})
	if err != nil || got != (holder{H: handle{9}, N: 3}) {
		t.Fatalf("UnmarshalContext = %v, %v", got, err)
	}
	// Without a context the codec sees nil and fails cleanly.
	if _, _, err := r.Marshal(holder{}); !errors.Is(err, serialization.ErrEncode) {
		t.Errorf("Marshal without context: %v, want ErrEncode", err)
	}
	if _, err := r.Unmarshal(manifest, out[3:]); !errors.Is(err, serialization.ErrDecode) {
		t.Errorf("Unmarshal without context: %v, want ErrDecode", err)
	}
	// A failed append leaves dst as it was.
	if _, out, err := r.AppendMarshal(prefix, struct{}{}, nil); err == nil || string(out) != "hdr" {
		t.Errorf("failed AppendMarshal = %q, %v", out, err)
	}
}

func BenchmarkAppendMarshal(b *testing.B) {
	r := serialization.NewRegistry()
	if err := serialization.Register[*benchMsg](r, "bench.Msg"); err != nil {
		b.Fatal(err)
	}
	m := &benchMsg{Seq: 1, Body: make([]byte, 100)}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		_, buf, _ = r.AppendMarshal(buf[:0], m, nil)
	}
}

type benchMsg struct {
	Seq  int64
	Body []byte
}

func TestCodecRoundTripsAndRecovers(t *testing.T) {
	r := serialization.NewRegistry()
	if err := serialization.Register[holder](r, "test.Holder"); err != nil {
		t.Fatal(err)
	}
	if err := serialization.Register[*benchMsg](r, "bench.Msg"); err != nil {
		t.Fatal(err)
	}
	c := r.NewCodec(table{1: "one"})
	var buf []byte
	for i := range 3 {
		m, out, err := c.Append(buf[:0], &benchMsg{Seq: int64(i), Body: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(m, out)
		if err != nil || got.(*benchMsg).Seq != int64(i) {
			t.Fatalf("Decode = %v, %v", got, err)
		}
		buf = out
	}
	// Failures leave the codec usable.
	if _, _, err := c.Append(nil, holder{H: handle{2}}); err != nil {
		t.Fatalf("unknown handle encodes as empty name: %v", err)
	}
	if _, err := c.Decode("test.Holder", []byte{0xc1}); !errors.Is(err, serialization.ErrDecode) {
		t.Errorf("garbage: %v", err)
	}
	if _, err := c.Decode("nope", nil); !errors.Is(err, serialization.ErrUnknownManifest) {
		t.Errorf("unknown manifest: %v", err)
	}
	m, out, err := c.Append(nil, holder{H: handle{1}, N: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Decode(m, out); err != nil || got.(holder).N != 5 {
		t.Fatalf("after failures: %v, %v", got, err)
	}
}

// TestCodecRemembersTheLastTypeSafely: the type a Codec remembers from its last Append
// still gets the nil check, and a different type after it gets its own entry.
func TestCodecRemembersTheLastTypeSafely(t *testing.T) {
	r := serialization.NewRegistry()
	if err := serialization.Register[*benchMsg](r, "bench.Msg"); err != nil {
		t.Fatal(err)
	}
	if err := serialization.Register[holder](r, "test.Holder"); err != nil {
		t.Fatal(err)
	}
	c := r.NewCodec(table{1: "one"})
	if m, _, err := c.Append(nil, &benchMsg{Seq: 1}); err != nil || m != "bench.Msg" {
		t.Fatalf("Append = %q, %v", m, err)
	}
	if _, _, err := c.Append(nil, (*benchMsg)(nil)); !errors.Is(err, serialization.ErrNilMessage) {
		t.Fatalf("nil pointer of the remembered type: %v", err)
	}
	if m, _, err := c.Append(nil, holder{N: 2}); err != nil || m != "test.Holder" {
		t.Fatalf("another type = %q, %v", m, err)
	}
	if m, _, err := c.Append(nil, benchMsg{Seq: 3}); err != nil || m != "bench.Msg" {
		t.Fatalf("the value form = %q, %v", m, err)
	}
	if _, _, err := c.Append(nil, struct{}{}); !errors.Is(err, serialization.ErrUnregistered) {
		t.Fatalf("unregistered: %v", err)
	}
	if _, _, err := c.Append(nil, nil); !errors.Is(err, serialization.ErrNilMessage) {
		t.Fatalf("nil: %v", err)
	}
}
