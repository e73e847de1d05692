package serialization

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// A fast path for the common message shape, a flat struct of numbers, booleans,
// strings and byte slices: the Codec encodes and decodes such a struct with a plan
// made once at registration (each field's key, offset and kind) instead of msgpack's
// reflection, which spends most of its time looking up type and field caches.
//
// The fast path writes exactly the bytes msgpack writes (a map keyed by field name,
// compact integers) and decodes what msgpack's encoder produces. Anything else it
// leaves to msgpack: a payload it does not recognise in full (another integer
// width for a float, a string for bytes, an unknown or repeated key, an array-shaped
// struct) is decoded by msgpack from the start, so the result and the errors are
// msgpack's. A type gets a plan only when nothing could make msgpack treat it
// differently: every field is exported (or skipped), of an unnamed basic type,
// tagged with at most a name, "-" or omitempty; the type implements none of the
// interfaces msgpack honours; and a probe value encodes and decodes the same both
// ways (which catches a codec registered with msgpack.Register).

// fastKind is the kind of a field the fast path handles.
type fastKind uint8

const (
	fastBool fastKind = iota + 1
	fastInt
	fastInt8
	fastInt16
	fastInt32
	fastInt64
	fastUint
	fastUint8
	fastUint16
	fastUint32
	fastUint64
	fastFloat32
	fastFloat64
	fastString
	fastBytes
)

// fastField is one field of a plan.
type fastField struct {
	name      string
	key       []byte // the name as msgpack encodes it
	off       uintptr
	kind      fastKind
	omitEmpty bool
}

// fastPlan encodes and decodes one struct type.
type fastPlan struct {
	typ       reflect.Type
	fields    []fastField
	omitEmpty bool // some field has omitempty
	// valueType is the type word of an interface holding a typ value (see box).
	valueType unsafe.Pointer
}

// eface is the layout of an interface value with no methods, as the Go runtime keeps
// it: a type word and a pointer to the value. (A value is stored in the data word
// itself only when its type is a pointer or a struct or array of one pointer, which no
// planned struct is: every field of one has a basic type or is a string or []byte.)
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// box returns an interface holding the typ value at ptr, without copying it; ptr must
// point to a new value that nothing else refers to. (reflect's Interface copies the
// value, since one reached through a pointer is addressable and might change: a
// second allocation per decoded message.)
func (p *fastPlan) box(ptr unsafe.Pointer) any {
	var v any
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = p.valueType, ptr
	return v
}

// maxFastFields bounds the fields of a planned struct (decode tracks them in a mask).
const maxFastFields = 64

var fastKinds = map[reflect.Kind]fastKind{
	reflect.Bool: fastBool, reflect.Int: fastInt, reflect.Int8: fastInt8, reflect.Int16: fastInt16,
	reflect.Int32: fastInt32, reflect.Int64: fastInt64, reflect.Uint: fastUint, reflect.Uint8: fastUint8,
	reflect.Uint16: fastUint16, reflect.Uint32: fastUint32, reflect.Uint64: fastUint64,
	reflect.Float32: fastFloat32, reflect.Float64: fastFloat64, reflect.String: fastString,
}

// The interfaces through which a type tells msgpack how to encode it.
var msgpackInterfaces = []reflect.Type{
	reflect.TypeFor[msgpack.CustomEncoder](), reflect.TypeFor[msgpack.CustomDecoder](),
	reflect.TypeFor[msgpack.Marshaler](), reflect.TypeFor[msgpack.Unmarshaler](),
	reflect.TypeFor[encoding.BinaryMarshaler](), reflect.TypeFor[encoding.BinaryUnmarshaler](),
	reflect.TypeFor[encoding.TextMarshaler](), reflect.TypeFor[encoding.TextUnmarshaler](),
}

// planFor returns a plan for base, or nil when the fast path must not handle it.
func planFor(base reflect.Type) *fastPlan {
	if base.Kind() != reflect.Struct || base.NumField() > maxFastFields {
		return nil
	}
	for _, t := range []reflect.Type{base, reflect.PointerTo(base)} {
		for _, i := range msgpackInterfaces {
			if t.Implements(i) {
				return nil
			}
		}
	}
	zero := reflect.Zero(base).Interface()
	p := &fastPlan{typ: base, valueType: (*eface)(unsafe.Pointer(&zero)).typ}
	seen := map[string]bool{}
	for i := range base.NumField() {
		f := base.Field(i)
		if f.Anonymous || f.Name == "_msgpack" {
			return nil
		}
		name, opts, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		if name == "-" {
			continue
		}
		if !f.IsExported() {
			continue
		}
		if opts != "" && opts != "omitempty" {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		kind, ok := fastKindOf(f.Type)
		if !ok || seen[name] {
			return nil
		}
		seen[name] = true
		ff := fastField{name: name, key: appendStr(nil, name), off: f.Offset, kind: kind, omitEmpty: opts == "omitempty"}
		p.omitEmpty = p.omitEmpty || ff.omitEmpty
		p.fields = append(p.fields, ff)
	}
	if !p.agreesWithMsgpack() {
		return nil
	}
	return p
}

// fastKindOf returns the fast kind of an unnamed basic type or []byte.
func fastKindOf(t reflect.Type) (fastKind, bool) {
	if t.PkgPath() != "" {
		return 0, false // a named type may have a codec of its own
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 && t.Elem().PkgPath() == "" {
		return fastBytes, true
	}
	k, ok := fastKinds[t.Kind()]
	return k, ok
}

// agreesWithMsgpack checks the plan on probe values, zero and set: both encode to
// msgpack's bytes, and msgpack's bytes decode to the same value.
func (p *fastPlan) agreesWithMsgpack() bool {
	zero := reflect.New(p.typ)
	set := reflect.New(p.typ)
	for i, f := range p.fields {
		ptr := unsafe.Add(set.UnsafePointer(), f.off)
		n := int64(i + 2)
		switch f.kind {
		case fastBool:
			*(*bool)(ptr) = true
		case fastInt, fastInt8, fastInt16, fastInt32, fastInt64:
			storeInt(ptr, f.kind, -n*1000)
		case fastUint, fastUint8, fastUint16, fastUint32, fastUint64:
			storeUint(ptr, f.kind, uint64(n*100))
		case fastFloat32:
			*(*float32)(ptr) = float32(n) + 0.5
		case fastFloat64:
			*(*float64)(ptr) = float64(n) + 0.25
		case fastString:
			*(*string)(ptr) = strings.Repeat("s", i+1)
		case fastBytes:
			*(*[]byte)(ptr) = bytes.Repeat([]byte{byte(i + 1)}, i+1)
		}
	}
	for _, v := range []reflect.Value{zero, set} {
		var want bytes.Buffer
		enc := msgpack.NewEncoder(&want)
		enc.UseCompactInts(true)
		if err := enc.EncodeValue(v); err != nil {
			return false
		}
		got := p.appendStruct(nil, v.UnsafePointer())
		if !bytes.Equal(got, want.Bytes()) {
			return false
		}
		viaMsgpack := reflect.New(p.typ)
		if err := msgpack.Unmarshal(want.Bytes(), viaMsgpack.Interface()); err != nil {
			return false
		}
		viaPlan := reflect.New(p.typ)
		if !p.decodeInto(want.Bytes(), viaPlan.UnsafePointer()) ||
			!reflect.DeepEqual(viaPlan.Interface(), viaMsgpack.Interface()) {
			return false
		}
	}
	return true
}

// appendValue appends the encoding of v, a pointer to the planned type; false when
// v is not one (a value of the type goes through msgpack).
func (p *fastPlan) appendValue(dst []byte, v any) ([]byte, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Type().Elem() != p.typ || rv.IsNil() {
		return dst, false
	}
	return p.appendStruct(dst, rv.UnsafePointer()), true
}

func (p *fastPlan) appendStruct(dst []byte, base unsafe.Pointer) []byte {
	n := len(p.fields)
	if p.omitEmpty {
		for _, f := range p.fields {
			if f.omitEmpty && isEmptyField(unsafe.Add(base, f.off), f.kind) {
				n--
			}
		}
	}
	dst = appendMapLen(dst, n)
	for _, f := range p.fields {
		ptr := unsafe.Add(base, f.off)
		if f.omitEmpty && isEmptyField(ptr, f.kind) {
			continue
		}
		dst = append(dst, f.key...)
		switch f.kind {
		case fastBool:
			if *(*bool)(ptr) {
				dst = append(dst, 0xc3)
			} else {
				dst = append(dst, 0xc2)
			}
		case fastInt, fastInt8, fastInt16, fastInt32, fastInt64:
			dst = appendInt(dst, loadInt(ptr, f.kind))
		case fastUint, fastUint8, fastUint16, fastUint32, fastUint64:
			dst = appendUint(dst, loadUint(ptr, f.kind))
		case fastFloat32:
			dst = binary.BigEndian.AppendUint32(append(dst, 0xca), math.Float32bits(*(*float32)(ptr)))
		case fastFloat64:
			dst = binary.BigEndian.AppendUint64(append(dst, 0xcb), math.Float64bits(*(*float64)(ptr)))
		case fastString:
			dst = appendStr(dst, *(*string)(ptr))
		case fastBytes:
			b := *(*[]byte)(ptr)
			if b == nil {
				dst = append(dst, 0xc0)
				break
			}
			dst = appendBinLen(dst, len(b))
			dst = append(dst, b...)
		}
	}
	return dst
}

// isEmptyField is msgpack's omitempty test for the fast kinds.
func isEmptyField(ptr unsafe.Pointer, k fastKind) bool {
	switch k {
	case fastBool:
		return !*(*bool)(ptr)
	case fastInt, fastInt8, fastInt16, fastInt32, fastInt64:
		return loadInt(ptr, k) == 0
	case fastUint, fastUint8, fastUint16, fastUint32, fastUint64:
		return loadUint(ptr, k) == 0
	case fastFloat32:
		return *(*float32)(ptr) == 0
	case fastFloat64:
		return *(*float64)(ptr) == 0
	case fastString:
		return len(*(*string)(ptr)) == 0
	case fastBytes:
		return len(*(*[]byte)(ptr)) == 0
	}
	return false
}

func loadInt(ptr unsafe.Pointer, k fastKind) int64 {
	switch k {
	case fastInt:
		return int64(*(*int)(ptr))
	case fastInt8:
		return int64(*(*int8)(ptr))
	case fastInt16:
		return int64(*(*int16)(ptr))
	case fastInt32:
		return int64(*(*int32)(ptr))
	}
	return *(*int64)(ptr)
}

func loadUint(ptr unsafe.Pointer, k fastKind) uint64 {
	switch k {
	case fastUint:
		return uint64(*(*uint)(ptr))
	case fastUint8:
		return uint64(*(*uint8)(ptr))
	case fastUint16:
		return uint64(*(*uint16)(ptr))
	case fastUint32:
		return uint64(*(*uint32)(ptr))
	}
	return *(*uint64)(ptr)
}

// storeInt stores n truncated to the field's width, as reflect.Value.SetInt does.
func storeInt(ptr unsafe.Pointer, k fastKind, n int64) {
	switch k {
	case fastInt:
		*(*int)(ptr) = int(n)
	case fastInt8:
		*(*int8)(ptr) = int8(n)
	case fastInt16:
		*(*int16)(ptr) = int16(n)
	case fastInt32:
		*(*int32)(ptr) = int32(n)
	default:
		*(*int64)(ptr) = n
	}
}

// storeUint stores n truncated to the field's width, as reflect.Value.SetUint does.
func storeUint(ptr unsafe.Pointer, k fastKind, n uint64) {
	switch k {
	case fastUint:
		*(*uint)(ptr) = uint(n)
	case fastUint8:
		*(*uint8)(ptr) = uint8(n)
	case fastUint16:
		*(*uint16)(ptr) = uint16(n)
	case fastUint32:
		*(*uint32)(ptr) = uint32(n)
	default:
		*(*uint64)(ptr) = n
	}
}

// msgpack's encodings, as its Encoder writes them with compact integers.

func appendMapLen(dst []byte, n int) []byte {
	switch {
	case n < 16:
		return append(dst, 0x80|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xde), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xdf), uint32(n))
}

func appendStr(dst []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n < 256:
		dst = append(dst, 0xd9, byte(n))
	case n <= math.MaxUint16:
		dst = binary.BigEndian.AppendUint16(append(dst, 0xda), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}

func appendBinLen(dst []byte, n int) []byte {
	switch {
	case n < 256:
		return append(dst, 0xc4, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xc5), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xc6), uint32(n))
}

func appendUint(dst []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(dst, byte(n))
	case n <= math.MaxUint8:
		return append(dst, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), n)
}

func appendInt(dst []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(dst, uint64(n))
	case n >= -32:
		return append(dst, byte(n))
	case n >= math.MinInt8:
		return append(dst, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(n))
}

// decode decodes data into a new value of the planned type, in the registered shape;
// false when data is not a payload the fast path recognises in full.
func (p *fastPlan) decode(data []byte, ptr bool) (any, bool) {
	v := reflect.New(p.typ)
	if !p.decodeInto(data, v.UnsafePointer()) {
		return nil, false
	}
	if ptr {
		return v.Interface(), true
	}
	return p.box(v.UnsafePointer()), true
}

// decodeInto decodes data into the zero struct at base.
func (p *fastPlan) decodeInto(data []byte, base unsafe.Pointer) bool {
	r := fastReader{b: data}
	n, ok := r.mapLen()
	if !ok {
		return false
	}
	var seen uint64
	for k := range n {
		key, ok := r.str()
		if !ok {
			return false
		}
		i := p.field(key, k)
		if i < 0 || seen&(1<<i) != 0 {
			return false // an unknown key (skipped by msgpack) or a repeated one
		}
		seen |= 1 << i
		f := &p.fields[i]
		if !r.value(unsafe.Add(base, f.off), f.kind) {
			return false
		}
	}
	return len(r.b) == 0
}

// field returns the index of the field whose key is key, or -1. The encoder writes the
// fields in order, so the k-th key read is tried against the k-th field first.
func (p *fastPlan) field(key []byte, k int) int {
	if k < len(p.fields) && p.fields[k].name == string(key) {
		return k
	}
	for i := range p.fields {
		if p.fields[i].name == string(key) {
			return i
		}
	}
	return -1
}

// fastReader reads msgpack values from a byte slice.
type fastReader struct{ b []byte }

func (r *fastReader) take(n int) ([]byte, bool) {
	if n < 0 || len(r.b) < n {
		return nil, false
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v, true
}

func (r *fastReader) code() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, true
}

// length reads a big-endian length of width bytes.
func (r *fastReader) length(width int) (int, bool) {
	b, ok := r.take(width)
	if !ok {
		return 0, false
	}
	switch width {
	case 1:
		return int(b[0]), true
	case 2:
		return int(binary.BigEndian.Uint16(b)), true
	}
	return int(binary.BigEndian.Uint32(b)), true
}

func (r *fastReader) mapLen() (int, bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return 0, false
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), true
	case c == 0xde:
		return r.length(2)
	case c == 0xdf:
		return r.length(4)
	}
	return 0, false
}

// str reads a str-family string, aliasing the input.
func (r *fastReader) str() ([]byte, bool) {
	c, ok := r.code()
	if !ok {
		return nil, false
	}
	var n int
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xd9:
		n, ok = r.length(1)
	case c == 0xda:
		n, ok = r.length(2)
	case c == 0xdb:
		n, ok = r.length(4)
	default:
		return nil, false
	}
	if !ok {
		return nil, false
	}
	return r.take(n)
}

// integer reads any msgpack integer as msgpack's DecodeInt64 (signed) and
// DecodeUint64 (unsigned) would.
func (r *fastReader) integer() (signed int64, unsigned uint64, ok bool) {
	c, ok := r.code()
	if !ok {
		return 0, 0, false
	}
	if c <= 0x7f || c >= 0xe0 {
		return int64(int8(c)), uint64(int8(c)), true
	}
	var b []byte
	switch c {
	case 0xcc, 0xd0:
		b, ok = r.take(1)
	case 0xcd, 0xd1:
		b, ok = r.take(2)
	case 0xce, 0xd2:
		b, ok = r.take(4)
	case 0xcf, 0xd3:
		b, ok = r.take(8)
	default:
		return 0, 0, false
	}
	if !ok {
		return 0, 0, false
	}
	switch c {
	case 0xcc:
		return int64(b[0]), uint64(b[0]), true
	case 0xd0:
		return int64(int8(b[0])), uint64(int8(b[0])), true
	case 0xcd:
		u := binary.BigEndian.Uint16(b)
		return int64(u), uint64(u), true
	case 0xd1:
		s := int16(binary.BigEndian.Uint16(b))
		return int64(s), uint64(s), true
	case 0xce:
		u := binary.BigEndian.Uint32(b)
		return int64(u), uint64(u), true
	case 0xd2:
		s := int32(binary.BigEndian.Uint32(b))
		return int64(s), uint64(s), true
	}
	u := binary.BigEndian.Uint64(b)
	return int64(u), u, true
}

// value decodes one field's value into ptr.
func (r *fastReader) value(ptr unsafe.Pointer, k fastKind) bool {
	switch k {
	case fastBool:
		c, ok := r.code()
		if !ok || c != 0xc2 && c != 0xc3 {
			return false
		}
		*(*bool)(ptr) = c == 0xc3
	case fastInt, fastInt8, fastInt16, fastInt32, fastInt64:
		n, _, ok := r.integer()
		if !ok {
			return false
		}
		storeInt(ptr, k, n)
	case fastUint, fastUint8, fastUint16, fastUint32, fastUint64:
		_, n, ok := r.integer()
		if !ok {
			return false
		}
		storeUint(ptr, k, n)
	case fastFloat32:
		c, ok := r.code()
		if !ok || c != 0xca {
			return false
		}
		b, ok := r.take(4)
		if !ok {
			return false
		}
		*(*float32)(ptr) = math.Float32frombits(binary.BigEndian.Uint32(b))
	case fastFloat64:
		c, ok := r.code()
		if !ok || c != 0xcb {
			return false
		}
		b, ok := r.take(8)
		if !ok {
			return false
		}
		*(*float64)(ptr) = math.Float64frombits(binary.BigEndian.Uint64(b))
	case fastString:
		s, ok := r.str()
		if !ok {
			return false
		}
		*(*string)(ptr) = string(s)
	case fastBytes:
		return r.bin(ptr)
	default:
		return false
	}
	return true
}

// bin decodes a bin-family value or nil into the []byte at ptr, as msgpack does: nil
// for nil, a new slice (empty, not nil, for length 0) otherwise.
func (r *fastReader) bin(ptr unsafe.Pointer) bool {
	c, ok := r.code()
	if !ok {
		return false
	}
	var n int
	switch c {
	case 0xc0:
		*(*[]byte)(ptr) = nil
		return true
	case 0xc4:
		n, ok = r.length(1)
	case 0xc5:
		n, ok = r.length(2)
	case 0xc6:
		n, ok = r.length(4)
	default:
		return false
	}
	if !ok {
		return false
	}
	b, ok := r.take(n)
	if !ok {
		return false
	}
	*(*[]byte)(ptr) = append(make([]byte, 0, n), b...)
	return true
}
