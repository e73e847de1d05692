package serialization_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
)

type plain struct {
	Name  string
	Count int64
	Data  []byte
	Tags  []string
	Attrs map[string]int
	At    time.Time
	Inner *inner
	List  []inner
	Any   any
}

type inner struct {
	X int
	Y string
}

type pointed struct{ N int }

type withChan struct{ C chan int }

func mustRegister(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("register: %v", err)
	}
}

func TestRegisterValidatesNames(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"shop.OrderPlaced.v1", true},
		{"troupe/sharding:ShardHome_2-x", true},
		{strings.Repeat("a", serialization.MaxNameLen), true},
		{"", false},
		{strings.Repeat("a", serialization.MaxNameLen+1), false},
		{"1abc", false},
		{".abc", false},
		{"has space", false},
		{"tab\there", false},
		{"naïve", false},
		{"nul\x00", false},
	}
	for _, tc := range cases {
		r := serialization.NewRegistry()
		err := serialization.Register[inner](r, tc.name)
		if tc.ok && err != nil {
			t.Errorf("Register(%q) = %v, want success", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, serialization.ErrInvalidName) {
			t.Errorf("Register(%q) = %v, want ErrInvalidName", tc.name, err)
		}
	}
}

func TestRegisterRejectsTypesThatCannotBeCarried(t *testing.T) {
	r := serialization.NewRegistry()
	checks := []struct {
		what string
		err  error
	}{
		{"any", serialization.Register[any](r, "t.any")},
		{"error", serialization.Register[error](r, "t.error")},
		{"func", serialization.Register[func()](r, "t.func")},
		{"chan", serialization.Register[chan int](r, "t.chan")},
		{"**T", serialization.Register[**inner](r, "t.ptrptr")},
	}
	for _, c := range checks {
		if !errors.Is(c.err, serialization.ErrInvalidType) {
			t.Errorf("%s: got %v, want ErrInvalidType", c.what, c.err)
		}
	}
}

func TestRegisterRejectsDuplicates(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[inner](r, "t.inner"))

	if err := serialization.Register[pointed](r, "t.inner"); !errors.Is(err, serialization.ErrDuplicate) {
		t.Errorf("same name: %v, want ErrDuplicate", err)
	}
	if err := serialization.Register[inner](r, "t.other"); !errors.Is(err, serialization.ErrDuplicate) {
		t.Errorf("same type: %v, want ErrDuplicate", err)
	}
	if err := serialization.Register[*inner](r, "t.other"); !errors.Is(err, serialization.ErrDuplicate) {
		t.Errorf("pointer to a registered type: %v, want ErrDuplicate", err)
	}
	// The failed registrations changed nothing.
	if _, err := r.Unmarshal("t.other", []byte{0x80}); !errors.Is(err, serialization.ErrUnknownManifest) {
		t.Errorf("t.other after failed registration: %v", err)
	}
	if m, ok := r.Manifest(&inner{}); !ok || m != "t.inner" {
		t.Errorf("Manifest(*inner) = %q, %v", m, ok)
	}
}

func TestValueRegistrationReturnsValues(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[plain](r, "t.plain"))

	in := plain{
		Name:  "n",
		Count: -7,
		Data:  []byte{1, 2, 3},
		Tags:  []string{"a", "b"},
		Attrs: map[string]int{"k": 1},
		At:    time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC),
		Inner: &inner{X: 1, Y: "y"},
		List:  []inner{{X: 2}, {Y: "z"}},
		Any:   "text",
	}
	m1, b1, err := r.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	m2, b2, err := r.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	if m1 != "t.plain" || m2 != m1 || !bytes.Equal(b1, b2) {
		t.Fatalf("value and pointer encode differently: %q %x / %q %x", m1, b1, m2, b2)
	}
	out, err := r.Unmarshal(m1, b1)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := out.(plain)
	if !ok {
		t.Fatalf("Unmarshal returned %T, want plain", out)
	}
	if !got.At.Equal(in.At) {
		t.Errorf("time: got %v want %v", got.At, in.At)
	}
	got.At = in.At
	if !reflect.DeepEqual(got, in) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, in)
	}
}

func TestPointerRegistrationReturnsPointers(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[*pointed](r, "t.pointed"))
	for _, v := range []any{pointed{N: 5}, &pointed{N: 5}} {
		m, b, err := r.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Unmarshal(m, b)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := out.(*pointed)
		if !ok || p == nil || p.N != 5 {
			t.Fatalf("Unmarshal returned %T %v, want *pointed{5}", out, out)
		}
	}
	// A msgpack nil still yields a non-nil pointer to the zero value.
	out, err := r.Unmarshal("t.pointed", []byte{0xc0})
	if err != nil {
		t.Fatal(err)
	}
	if p := out.(*pointed); p == nil || p.N != 0 {
		t.Fatalf("nil input gave %#v", out)
	}
}

func TestNonStructTypes(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[string](r, "t.string"))
	mustRegister(t, serialization.Register[[]int](r, "t.ints"))
	mustRegister(t, serialization.Register[map[string]bool](r, "t.set"))
	for _, v := range []any{"hello", []int{1, -2, 300000}, map[string]bool{"x": true}} {
		m, b, err := r.Marshal(v)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		out, err := r.Unmarshal(m, b)
		if err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !reflect.DeepEqual(out, v) {
			t.Errorf("got %#v want %#v", out, v)
		}
	}
}

func TestMarshalErrors(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[*pointed](r, "t.pointed"))
	mustRegister(t, serialization.Register[withChan](r, "t.chan"))

	if _, _, err := r.Marshal(nil); !errors.Is(err, serialization.ErrNilMessage) {
		t.Errorf("nil: %v", err)
	}
	if _, _, err := r.Marshal((*pointed)(nil)); !errors.Is(err, serialization.ErrNilMessage) {
		t.Errorf("nil pointer: %v", err)
	}
	for _, v := range []any{inner{}, &inner{}, 42, func() {}, make(chan int)} {
		if _, _, err := r.Marshal(v); !errors.Is(err, serialization.ErrUnregistered) {
			t.Errorf("%T: %v, want ErrUnregistered", v, err)
		}
	}
	if _, _, err := r.Marshal(withChan{C: make(chan int)}); !errors.Is(err, serialization.ErrEncode) {
		t.Errorf("chan field: %v, want ErrEncode", err)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[plain](r, "t.plain"))
	_, good, err := r.Marshal(plain{Name: "x", List: []inner{{X: 1}}})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := r.Unmarshal("t.unknown", good); !errors.Is(err, serialization.ErrUnknownManifest) {
		t.Errorf("unknown manifest: %v", err)
	}
	if _, err := r.Unmarshal("", good); !errors.Is(err, serialization.ErrUnknownManifest) {
		t.Errorf("empty manifest: %v", err)
	}
	bad := map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)-1],
		"trailing":       append(append([]byte{}, good...), 0x01),
		"reserved":       {0xc1},
		"wrong type":     {0xa3, 'a', 'b', 'c'},
		"huge array":     {0x81, 0xa4, 'L', 'i', 's', 't', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x80},
		"huge map":       {0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'a', 0x01},
		"huge string":    {0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
		"foreign ext":    {0x81, 0xa3, 'A', 'n', 'y', 0xd4, 0x05, 0x00},
		"bad time ext":   {0x81, 0xa2, 'A', 't', 0xd5, 0xff, 0x00, 0x00},
		"deep nesting":   append(bytes.Repeat([]byte{0x91}, serialization.MaxDepth+1), 0x00),
		"string as int":  {0x81, 0xa5, 'C', 'o', 'u', 'n', 't', 0xa1, 'x'},
		"negative bytes": {0x81, 0xa4, 'D', 'a', 't', 'a', 0xff},
	}
	for name, data := range bad {
		if _, err := r.Unmarshal("t.plain", data); !errors.Is(err, serialization.ErrDecode) {
			t.Errorf("%s: %v, want ErrDecode", name, err)
		}
	}
	// Just within the depth limit is accepted (the interface field takes
	// nested arrays).
	nested := append([]byte{0x81, 0xa3, 'A', 'n', 'y'}, bytes.Repeat([]byte{0x91}, serialization.MaxDepth-1)...)
	nested = append(nested, 0x07)
	if _, err := r.Unmarshal("t.plain", nested); err != nil {
		t.Errorf("nesting at the limit: %v", err)
	}
}

func TestInterfaceFieldsDecodeToGenericValues(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[plain](r, "t.plain"))
	mustRegister(t, serialization.Register[inner](r, "t.inner"))
	m, b, err := r.Marshal(plain{Any: inner{X: 1, Y: "y"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Unmarshal(m, b)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(plain).Any
	want := map[string]any{"X": int8(1), "Y": "y"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("interface field decoded to %#v, want %#v", got, want)
	}
}

func TestSchemaEvolution(t *testing.T) {
	type v1 struct{ A int }
	type v2 struct {
		A int
		B string
	}
	old := serialization.NewRegistry()
	mustRegister(t, serialization.Register[v1](old, "t.evolving"))
	cur := serialization.NewRegistry()
	mustRegister(t, serialization.Register[v2](cur, "t.evolving"))

	m, b, err := old.Marshal(v1{A: 1})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cur.Unmarshal(m, b)
	if err != nil || out.(v2) != (v2{A: 1}) {
		t.Fatalf("old data read by new code: %#v, %v", out, err)
	}
	m, b, err = cur.Marshal(v2{A: 2, B: "new"})
	if err != nil {
		t.Fatal(err)
	}
	out, err = old.Unmarshal(m, b)
	if err != nil || out.(v1) != (v1{A: 2}) {
		t.Fatalf("new data read by old code: %#v, %v", out, err)
	}
}

func TestUnmarshalDoesNotAliasInput(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[plain](r, "t.plain"))
	m, b, err := r.Marshal(plain{Data: []byte("abcdef"), Name: "name"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Unmarshal(m, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0
	}
	if p := out.(plain); string(p.Data) != "abcdef" || p.Name != "name" {
		t.Fatalf("decoded value changed with its input: %+v", p)
	}
}

func TestConcurrentRegisterAndUse(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[*pointed](r, "t.pointed"))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				m, b, err := r.Marshal(&pointed{N: i})
				if err == nil {
					var out any
					out, err = r.Unmarshal(m, b)
					if err == nil && out.(*pointed).N != i {
						err = fmt.Errorf("got %d want %d", out.(*pointed).N, i)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := serialization.Register[inner](r, "t.inner"); err != nil {
			errs <- err
		}
		if err := serialization.Register[plain](r, "t.plain"); err != nil {
			errs <- err
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestMarshalAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[*pointed](r, "t.pointed"))
	msg := &pointed{N: 12345}
	allocs := testing.AllocsPerRun(1000, func() {
		if _, _, err := r.Marshal(msg); err != nil {
			t.Fatal(err)
		}
	})
	// One allocation: the returned slice. Encoders and buffers are pooled.
	if allocs > 1 {
		t.Errorf("Marshal allocates %.1f times per call, want at most 1", allocs)
	}
}

type withRaw struct {
	Raw  msgpack.RawMessage
	Nest [][]byte
	Keys map[string][]byte
}

// TestCodecDecodeDoesNotAliasInput: what a Codec decodes owns its memory, on the fast
// path and through msgpack, for every kind of field that holds bytes, and after the
// Codec has decoded more into its scratch buffers. Sharding's regions and the
// singleton's managers reuse a batch's memory once they have decoded its messages,
// relying on this.
func TestCodecDecodeDoesNotAliasInput(t *testing.T) {
	r := serialization.NewRegistry()
	mustRegister(t, serialization.Register[benchMsg](r, "t.flat"))
	mustRegister(t, serialization.Register[plain](r, "t.plain"))
	mustRegister(t, serialization.Register[*withRaw](r, "t.raw"))
	inner, _ := msgpack.Marshal([]byte("raw bytes"))
	values := []any{
		benchMsg{Seq: 7, Body: []byte("flat body")},
		plain{Data: []byte("abcdef"), Name: "name", Tags: []string{"tag"}, Attrs: map[string]int{"k": 1}},
		&withRaw{Raw: inner, Nest: [][]byte{[]byte("nested")}, Keys: map[string][]byte{"key": []byte("value")}},
	}
	c := r.NewCodec(nil)
	for _, v := range values {
		m, b, err := r.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Decode(m, b)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%+v", out)
		for i := range b {
			b[i] = 0xc1 // never used in msgpack
		}
		for _, w := range values { // the codec's scratch is used again
			m2, b2, _ := r.Marshal(w)
			if _, err := c.Decode(m2, b2); err != nil {
				t.Fatal(err)
			}
		}
		if got := fmt.Sprintf("%+v", out); got != want {
			t.Errorf("%s: decoded value changed with its input:\n got %s\nwant %s", m, got, want)
		}
	}
}
