package serialization

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"
)

// flat has a field of every kind the fast path handles, tags, omitempty, a skipped
// field and an unexported one.
type flat struct {
	B      bool
	I      int
	I8     int8
	I16    int16
	I32    int32
	I64    int64 `msgpack:"sixty_four"`
	U      uint
	U8     uint8
	U16    uint16
	U32    uint32
	U64    uint64
	F32    float32
	F64    float64
	S      string
	Raw    []byte
	Opt    int    `msgpack:",omitempty"`
	OptS   string `msgpack:"opt_s,omitempty"`
	OptB   []byte `msgpack:",omitempty"`
	Skip   int    `msgpack:"-"`
	hidden int
}

type named int

type withNamed struct{ N named }

type withAlias struct {
	N int `msgpack:"n,alias:m"`
}

type embedded struct{ flat }

type nested struct{ In flat }

type marshals struct{ N int }

func (m marshals) MarshalBinary() ([]byte, error) { return []byte{1}, nil }

type customCodec struct{ N int }

func init() {
	msgpack.Register(customCodec{},
		func(e *msgpack.Encoder, v reflect.Value) error { return e.EncodeString("custom") },
		func(d *msgpack.Decoder, v reflect.Value) error { _, err := d.DecodeString(); return err })
}

func TestOnlyPlainFlatStructsGetAFastPath(t *testing.T) {
	for _, tc := range []struct {
		typ  reflect.Type
		want bool
	}{
		{reflect.TypeFor[flat](), true},
		{reflect.TypeFor[struct{}](), true},
		{reflect.TypeFor[withNamed](), false},   // a named field type may have a codec
		{reflect.TypeFor[withAlias](), false},   // tag options other than omitempty
		{reflect.TypeFor[embedded](), false},    // inlined fields
		{reflect.TypeFor[nested](), false},      // struct fields
		{reflect.TypeFor[marshals](), false},    // an interface msgpack honours
		{reflect.TypeFor[customCodec](), false}, // msgpack.Register: caught by the probe
		{reflect.TypeFor[[]int](), false},
		{reflect.TypeFor[string](), false},
	} {
		if got := planFor(tc.typ) != nil; got != tc.want {
			t.Errorf("%v: fast path %v, want %v", tc.typ, got, tc.want)
		}
	}
}

func genFlat(t *rapid.T) *flat {
	f32 := rapid.Float32().Draw(t, "f32")
	f64 := rapid.Float64().Draw(t, "f64")
	return &flat{
		B: rapid.Bool().Draw(t, "b"), I: rapid.Int().Draw(t, "i"), I8: rapid.Int8().Draw(t, "i8"),
		I16: rapid.Int16().Draw(t, "i16"), I32: rapid.Int32().Draw(t, "i32"), I64: rapid.Int64().Draw(t, "i64"),
		U: rapid.Uint().Draw(t, "u"), U8: rapid.Uint8().Draw(t, "u8"), U16: rapid.Uint16().Draw(t, "u16"),
		U32: rapid.Uint32().Draw(t, "u32"), U64: rapid.Uint64().Draw(t, "u64"), F32: f32, F64: f64,
		S:    rapid.StringN(0, 300, -1).Draw(t, "s"),
		Raw:  rapid.OneOf(rapid.Just([]byte(nil)), rapid.SliceOfN(rapid.Byte(), 0, 70_000)).Draw(t, "raw"),
		Opt:  rapid.IntRange(-2, 2).Draw(t, "opt"),
		OptS: rapid.SampledFrom([]string{"", "x"}).Draw(t, "opts"),
		OptB: rapid.OneOf(rapid.Just([]byte(nil)), rapid.Just([]byte{}), rapid.Just([]byte{7})).Draw(t, "optb"),
		Skip: rapid.Int().Draw(t, "skip"), hidden: rapid.Int().Draw(t, "hidden"),
	}
}

func msgpackBytes(t *rapid.T, v any) []byte {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sameValue compares decoded values, NaNs included.
func sameValue(a, b *flat) bool {
	ca, cb := *a, *b
	if math.IsNaN(float64(ca.F32)) && math.IsNaN(float64(cb.F32)) {
		ca.F32, cb.F32 = 0, 0
	}
	if math.IsNaN(ca.F64) && math.IsNaN(cb.F64) {
		ca.F64, cb.F64 = 0, 0
	}
	return reflect.DeepEqual(ca, cb)
}

// TestTheFastPathWritesAndReadsWhatMsgpackDoes holds the Codec, and the Registry's
// Marshal and Unmarshal (which persistence uses), to msgpack's bytes and values.
func TestTheFastPathWritesAndReadsWhatMsgpackDoes(t *testing.T) {
	reg := NewRegistry()
	if err := Register[*flat](reg, "t.flat"); err != nil {
		t.Fatal(err)
	}
	if reg.tables.Load().byName["t.flat"].fast == nil {
		t.Fatal("no fast path for the test type")
	}
	c := reg.NewCodec(nil)
	for _, tc := range []struct {
		name   string
		encode func(v any) (string, []byte, error)
		decode func(data []byte) (any, error)
	}{
		{"Codec", func(v any) (string, []byte, error) { return c.Append(nil, v) },
			func(data []byte) (any, error) { return c.Decode("t.flat", data) }},
		{"Registry", reg.Marshal, func(data []byte) (any, error) { return reg.Unmarshal("t.flat", data) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				v := genFlat(t)
				want := msgpackBytes(t, v)
				m, got, err := tc.encode(v)
				if err != nil || m != "t.flat" {
					t.Fatal(m, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("fast path wrote\n%x\nmsgpack writes\n%x", got, want)
				}
				dec, err := tc.decode(want)
				if err != nil {
					t.Fatal(err)
				}
				viaMsgpack, err := msgpackOnly(reg, "t.flat", want)
				if err != nil {
					t.Fatal(err)
				}
				if !sameValue(dec.(*flat), viaMsgpack.(*flat)) {
					t.Fatalf("fast path read %+v, msgpack reads %+v", dec, viaMsgpack)
				}
			})
		})
	}
}

// msgpackOnly decodes as the registry does without its fast path: the reference the
// fast path is held to.
func msgpackOnly(reg *Registry, manifest string, data []byte) (any, error) {
	e, ok := reg.byName(manifest)
	if !ok {
		return nil, ErrUnknownManifest
	}
	return reg.unmarshalMsgpack(e, data, nil)
}

// TestTheRegistryTakesTheFastPath checks that Marshal and AppendMarshal encode a flat
// value without msgpack.
func TestTheRegistryTakesTheFastPath(t *testing.T) {
	reg := NewRegistry()
	if err := Register[*flat](reg, "t.flat"); err != nil {
		t.Fatal(err)
	}
	// msgpack's encoder allocates four times for this value; the fast path not at all.
	// (Decoding allocates as often either way: the value, its string and its bytes.)
	dst, v := make([]byte, 0, 512), &flat{S: "abc", Raw: []byte{1}}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = reg.AppendMarshal(dst[:0], v, nil) }); n > 0 {
		t.Errorf("AppendMarshal of a flat value allocates %v times, want 0", n)
	}
}

// TestWhatTheFastPathDoesNotRecogniseGoesToMsgpack hands the Codec encodings msgpack
// accepts (or refuses) but its own encoder does not write: the Codec must answer as
// msgpack does.
func TestWhatTheFastPathDoesNotRecogniseGoesToMsgpack(t *testing.T) {
	reg := NewRegistry()
	if err := Register[flat](reg, "t.flat"); err != nil {
		t.Fatal(err)
	}
	if reg.tables.Load().byName["t.flat"].fast == nil {
		t.Fatal("no fast path for the test type")
	}
	c := reg.NewCodec(nil)
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, data := range map[string][]byte{
		"a float for an int":     enc(map[string]any{"I": 2.5}),
		"an int for a float":     enc(map[string]any{"F64": 3}),
		"a string for bytes":     enc(map[string]any{"Raw": "text"}),
		"nil for a string":       enc(map[string]any{"S": nil}),
		"an unknown key":         enc(map[string]any{"Nope": 1, "I": 4}),
		"a repeated key":         append([]byte{0x82}, append(enc("I"), append([]byte{1}, append(enc("I"), 2)...)...)...),
		"the struct as an array": enc([]any{true, 1}),
		"trailing bytes":         append(enc(map[string]any{"I": 1}), 0),
		"truncated":              enc(map[string]any{"S": "abc"})[:5],
		"not a map":              enc("hello"),
		"empty":                  {},
		"a nested value":         enc(map[string]any{"S": []any{"x"}}),
	} {
		got, gotErr := c.Decode("t.flat", data)
		want, wantErr := msgpackOnly(reg, "t.flat", data)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: codec error %v, msgpack error %v", name, gotErr, wantErr)
			continue
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: codec read %+v, msgpack reads %+v", name, got, want)
		}
	}
}

func TestTheFastPathKeepsTheRegisteredShape(t *testing.T) {
	reg := NewRegistry()
	if err := Register[flat](reg, "t.value"); err != nil {
		t.Fatal(err)
	}
	type other struct{ S string }
	if err := Register[*other](reg, "t.pointer"); err != nil {
		t.Fatal(err)
	}
	c := reg.NewCodec(nil)
	for _, v := range []any{flat{I: 1}, &flat{I: 2}, other{S: "a"}, &other{S: "b"}} {
		m, data, err := c.Append(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(m, data)
		if err != nil {
			t.Fatal(err)
		}
		if (m == "t.value") != (reflect.TypeOf(got) == reflect.TypeFor[flat]()) ||
			(m == "t.pointer") != (reflect.TypeOf(got) == reflect.TypeFor[*other]()) {
			t.Errorf("%T decoded as %T", v, got)
		}
	}
	var nilFlat *flat
	if _, _, err := c.Append(nil, nilFlat); !errors.Is(err, ErrNilMessage) {
		t.Errorf("nil pointer: %v", err)
	}
}

// A value decoded for a type registered as a value (not a pointer) costs no more
// allocations than one registered as a pointer, is the value encoded, and shares no
// memory with other decoded values.
func TestDecodingAValueDoesNotCopyIt(t *testing.T) {
	reg := NewRegistry()
	if err := Register[flat](reg, "t.value"); err != nil {
		t.Fatal(err)
	}
	type other struct{ N int }
	if err := Register[*other](reg, "t.pointer"); err != nil {
		t.Fatal(err)
	}
	c := reg.NewCodec(nil)
	want := flat{I: 7, U64: math.MaxUint64, F64: 2.5, S: "abc", OptS: "x"}
	m, data, err := c.Append(nil, want)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Decode(m, data)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Decode(m, data)
	if !reflect.DeepEqual(a, want) || !reflect.DeepEqual(b, want) {
		t.Fatalf("decoded %+v and %+v, want %+v", a, b, want)
	}
	// Two decodes are two values: an interface's value cannot be changed, but the
	// memory behind it must not be shared either.
	if (*eface)(unsafe.Pointer(&a)).data == (*eface)(unsafe.Pointer(&b)).data {
		t.Fatal("two decoded values share their memory")
	}
	pm, pdata, _ := c.Append(nil, &other{N: 1})
	value := testing.AllocsPerRun(100, func() { _, _ = c.Decode(m, data) })
	pointer := testing.AllocsPerRun(100, func() { _, _ = c.Decode(pm, pdata) })
	// flat's string is one more allocation than other has.
	if value > pointer+1 {
		t.Errorf("decoding a value allocates %v times, a pointer to a struct without strings %v", value, pointer)
	}
}

// FuzzCodecDecode checks that the Codec, fast path and all, decodes whatever it is
// given as msgpack does.
func FuzzCodecDecode(f *testing.F) {
	reg := NewRegistry()
	if err := Register[*flat](reg, "t.flat"); err != nil {
		f.Fatal(err)
	}
	seed, err := msgpack.Marshal(&flat{I: -5, S: "s", Raw: []byte{1, 2}, F32: 1.5})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{0x81, 0xa1, 'I', 0xd3, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := reg.NewCodec(nil)
		got, gotErr := c.Decode("t.flat", data)
		want, wantErr := msgpackOnly(reg, "t.flat", data)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("codec error %v, msgpack error %v", gotErr, wantErr)
		}
		if gotErr == nil && !sameValue(got.(*flat), want.(*flat)) {
			t.Fatalf("codec read %+v, msgpack reads %+v", got, want)
		}
	})
}
