package serialization

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/vmihailenco/msgpack/v5"
)

// MaxNameLen is the longest type name Register accepts, in bytes.
const MaxNameLen = 200

// Registry maps Go types to stable names ("manifests") and back, and encodes
// and decodes registered values with msgpack.
//
// A Registry is safe for concurrent use. Registration is expected at start-up
// and is comparatively slow (it copies the tables); Marshal and Unmarshal
// take no lock.
type Registry struct {
	mu     sync.Mutex             // serialises Register
	tables atomic.Pointer[tables] // immutable snapshot read by Marshal/Unmarshal
}

// entry describes one registered type.
type entry struct {
	name string
	base reflect.Type // the registered type with its pointer, if any, removed
	ptr  bool         // the registered type is *base
	fast *fastPlan    // the Codec's fast path for base, nil when msgpack does it all
}

// tables is an immutable snapshot of the registrations.
type tables struct {
	byName map[string]*entry
	byType map[reflect.Type]*entry // holds both base and *base for each entry
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	r := &Registry{}
	r.tables.Store(&tables{
		byName: map[string]*entry{},
		byType: map[reflect.Type]*entry{},
	})
	return r
}

// Register registers type T under name.
//
// The registered shape decides what Unmarshal returns: after Register[Foo]
// Unmarshal returns a Foo value, after Register[*Foo] it returns a non-nil
// *Foo. Marshal accepts both Foo and *Foo in either case and encodes them
// identically, so a sender may use a pointer while the receiver registered a
// value, or the other way round. Because Foo and *Foo share one encoding,
// registering both is a duplicate.
//
// A name is 1 to MaxNameLen bytes, starts with an ASCII letter and holds only
// ASCII letters, digits and the characters '.', '_', '-', '/' and ':'.
// Choose names that outlive refactoring (for example "shop.OrderPlaced.v1"),
// not Go package paths: the name is what is stored and sent, and renaming a
// registered type breaks reading old data.
//
// Register returns an error wrapping ErrInvalidName, ErrInvalidType or
// ErrDuplicate, and changes nothing, when the registration is not accepted.
// It is safe to call concurrently with Marshal and Unmarshal.
func Register[T any](r *Registry, name string) error {
	return r.register(reflect.TypeFor[T](), name)
}

func (r *Registry) register(t reflect.Type, name string) error {
	if err := validName(name); err != nil {
		return err
	}
	e := &entry{name: name, base: t}
	if t.Kind() == reflect.Pointer {
		e.base, e.ptr = t.Elem(), true
	}
	switch e.base.Kind() {
	case reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Pointer, reflect.Invalid:
		return fmt.Errorf("%w: %v", ErrInvalidType, t)
	}
	e.fast = planFor(e.base)

	if wiretypes.Reserved(name) {
		return fmt.Errorf("%w: name %q is in Troupe's reserved namespace %q", ErrDuplicate, name, wiretypes.Prefix)
	}
	if own, ok := wiretypes.NameOf(e.base); ok {
		return fmt.Errorf("%w: type %v is Troupe's own, known as %q", ErrDuplicate, t, own)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.tables.Load()
	if prev, ok := old.byName[name]; ok {
		return fmt.Errorf("%w: name %q is taken by %v", ErrDuplicate, name, prev.typ())
	}
	if prev, ok := old.byType[e.base]; ok {
		return fmt.Errorf("%w: type %v is registered as %q", ErrDuplicate, t, prev.name)
	}
	next := &tables{
		byName: make(map[string]*entry, len(old.byName)+1),
		byType: make(map[reflect.Type]*entry, len(old.byType)+2),
	}
	for k, v := range old.byName {
		next.byName[k] = v
	}
	for k, v := range old.byType {
		next.byType[k] = v
	}
	next.byName[name] = e
	next.byType[e.base] = e
	next.byType[reflect.PointerTo(e.base)] = e
	r.tables.Store(next)
	return nil
}

// typ returns the type as it was registered.
func (e *entry) typ() reflect.Type {
	if e.ptr {
		return reflect.PointerTo(e.base)
	}
	return e.base
}

func validName(name string) error {
	if len(name) == 0 || len(name) > MaxNameLen {
		return fmt.Errorf("%w: length %d is not within 1..%d", ErrInvalidName, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if i == 0 && !letter {
			return fmt.Errorf("%w: %q must start with an ASCII letter", ErrInvalidName, name)
		}
		if letter || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/' || c == ':' {
			continue
		}
		return fmt.Errorf("%w: %q holds the byte %q at %d", ErrInvalidName, name, c, i)
	}
	return nil
}

// Manifest returns the name under which the type of v is registered, without
// encoding v. It reports false for nil and for unregistered types.
func (r *Registry) Manifest(v any) (string, bool) {
	if v == nil {
		return "", false
	}
	e, ok := r.byType(reflect.TypeOf(v))
	if !ok {
		return "", false
	}
	return e.name, true
}

// byType returns the registration of t: the registry's own, or one of Troupe's own
// wire types (internal/wiretypes), which every registry knows.
func (r *Registry) byType(t reflect.Type) (*entry, bool) {
	if e, ok := r.tables.Load().byType[t]; ok {
		return e, true
	}
	if e, ok := wireByType.Load(t); ok {
		return e.(*entry), true
	}
	name, ok := wiretypes.NameOf(t)
	if !ok {
		return nil, false
	}
	e, ok := wireEntry(name)
	if ok {
		wireByType.Store(t, e)
	}
	return e, ok
}

// byName returns the registration of name, as byType does.
func (r *Registry) byName(name string) (*entry, bool) {
	if e, ok := r.tables.Load().byName[name]; ok {
		return e, true
	}
	return wireEntry(name)
}

// The entries of Troupe's own wire types are the same in every registry: they are
// made once (with their fast path) and kept, by name and by the type a caller
// encodes (a value or a pointer), so that each message of one costs no lock and no
// allocation to look up.
var wireByName, wireByType sync.Map

// wireEntry returns the entry of the wire type named name.
func wireEntry(name string) (*entry, bool) {
	if e, ok := wireByName.Load(name); ok {
		return e.(*entry), true
	}
	t, ok := wiretypes.Lookup(name)
	if !ok {
		return nil, false
	}
	e := &entry{name: name, base: t}
	if t.Kind() == reflect.Pointer {
		e.base, e.ptr = t.Elem(), true
	}
	e.fast = planFor(e.base)
	got, _ := wireByName.LoadOrStore(name, e)
	return got.(*entry), true
}

// encState is a pooled encoder writing into its own buffer.
type encState struct {
	w   appendWriter
	own []byte // the buffer Marshal reuses
	enc *msgpack.Encoder
}

// appendWriter is the encoder's writer: it appends to b and carries the caller's
// context for custom codecs (see EncoderContext).
type appendWriter struct {
	b   []byte
	ctx any
}

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *appendWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

func (w *appendWriter) WriteString(s string) (int, error) {
	w.b = append(w.b, s...)
	return len(s), nil
}

// maxPooledBuf bounds the buffers kept in the pool, so that one huge message
// does not pin its buffer for the life of the process.
const maxPooledBuf = 64 << 10

var encPool = sync.Pool{New: func() any {
	s := &encState{}
	s.enc = msgpack.NewEncoder(&s.w)
	s.enc.UseCompactInts(true)
	return s
}}

// Marshal encodes v, whose type (or whose pointed-to type) must be
// registered, and returns its manifest and its bytes. The returned slice is
// newly allocated and owned by the caller.
//
// Marshal returns an error wrapping ErrNilMessage for nil and nil pointers,
// ErrUnregistered for a type that is not registered, and ErrEncode when
// msgpack cannot encode the value. It never panics.
func (r *Registry) Marshal(v any) (manifest string, data []byte, err error) {
	return r.appendMarshal(nil, v, nil, true)
}

// AppendMarshal is Marshal that appends the encoding to dst and returns the extended
// slice, without allocating when dst has room. ctx is handed to custom msgpack codecs
// through EncoderContext: a transport passes what its codec for references needs. On
// error the returned slice is dst unchanged.
func (r *Registry) AppendMarshal(dst []byte, v any, ctx any) (manifest string, out []byte, err error) {
	return r.appendMarshal(dst, v, ctx, false)
}

func (r *Registry) appendMarshal(dst []byte, v any, ctx any, own bool) (string, []byte, error) {
	e, err := r.entryOf(v)
	if err != nil {
		return "", dst, err
	}
	if e.fast != nil && !own {
		if out, ok := e.fast.appendValue(dst, v); ok {
			return e.name, out, nil
		}
	}
	s := encPool.Get().(*encState)
	if own {
		dst = s.own[:0]
	}
	var out []byte
	fast := false
	if e.fast != nil {
		out, fast = e.fast.appendValue(dst, v)
	}
	if !fast {
		out, err = encode(s, dst, v, ctx)
		if err != nil {
			// s may be in any state after a failure; let it go.
			return "", dst, encodeError(e, v, err)
		}
	}
	if own {
		// Copy before the state goes back to the pool and another caller reuses it.
		s.own, out = out, bytes.Clone(out)
	}
	if cap(s.own) <= maxPooledBuf {
		encPool.Put(s)
	}
	return e.name, out, nil
}

// entryOf returns the registration of v's type; nil values and unregistered types are
// errors.
func (r *Registry) entryOf(v any) (*entry, error) {
	if v == nil {
		return nil, ErrNilMessage
	}
	t := reflect.TypeOf(v)
	e, ok := r.byType(t)
	if !ok {
		return nil, fmt.Errorf("%w: %v", ErrUnregistered, t)
	}
	if err := nilPointer(t, v); err != nil {
		return nil, err
	}
	return e, nil
}

// nilPointer reports v, of type t, as ErrNilMessage when it is a nil pointer.
func nilPointer(t reflect.Type, v any) error {
	if t.Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
		return fmt.Errorf("%w: nil %v", ErrNilMessage, t)
	}
	return nil
}

func encodeError(e *entry, v any, err error) error {
	return fmt.Errorf("%w: %v as %q: %w", ErrEncode, reflect.TypeOf(v), e.name, err)
}

func encode(s *encState, dst []byte, v any, ctx any) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic while encoding: %v", p)
		}
	}()
	s.w.b, s.w.ctx = dst, ctx
	defer func() { s.w.b, s.w.ctx = nil, nil }()
	if err := s.enc.Encode(v); err != nil {
		return nil, err
	}
	return s.w.b, nil
}

// EncoderContext returns the ctx given to AppendMarshal when enc is one of the
// registry's encoders, and nil otherwise. A custom encoder registered with
// msgpack.Register calls it to find its context.
func EncoderContext(enc *msgpack.Encoder) any {
	if w, ok := enc.Writer().(*appendWriter); ok {
		return w.ctx
	}
	return nil
}

// DecoderContext returns the ctx given to UnmarshalContext when dec is one of the
// registry's decoders, and nil otherwise.
func DecoderContext(dec *msgpack.Decoder) any {
	if r, ok := dec.Buffered().(*ctxReader); ok {
		return r.ctx
	}
	return nil
}

// decState is a pooled decoder reading from its own reader.
type decState struct {
	rd  ctxReader
	dec *msgpack.Decoder
}

// ctxReader is the decoder's reader: the input, and the caller's context for custom
// codecs (see DecoderContext).
type ctxReader struct {
	bytes.Reader
	ctx any
}

var decPool = sync.Pool{New: func() any {
	s := &decState{}
	s.dec = msgpack.NewDecoder(&s.rd)
	return s
}}

// Unmarshal decodes data as the type registered under manifest and returns
// the value in its registered shape: a value for Register[Foo], a non-nil
// pointer for Register[*Foo].
//
// Unmarshal only ever allocates the registered type (and the types of its
// fields); it never looks up a type by a name found in the data. Before
// decoding it checks that data is exactly one well-formed msgpack value whose
// declared lengths fit in the input and whose nesting is at most MaxDepth
// deep, and it rejects msgpack extension types other than the timestamp, so
// that types registered globally with msgpack.RegisterExt cannot be
// instantiated from outside.
//
// Unmarshal returns an error wrapping ErrUnknownManifest when no type is
// registered under manifest and ErrDecode for anything that is not a valid
// encoding. It never panics. The returned value does not alias data.
func (r *Registry) Unmarshal(manifest string, data []byte) (any, error) {
	return r.UnmarshalContext(manifest, data, nil)
}

// UnmarshalContext is Unmarshal that hands ctx to custom msgpack codecs through
// DecoderContext.
func (r *Registry) UnmarshalContext(manifest string, data []byte, ctx any) (any, error) {
	e, ok := r.byName(manifest)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownManifest, truncate(manifest))
	}
	if e.fast != nil {
		if v, ok := e.fast.decode(data, e.ptr); ok {
			return v, nil
		}
	}
	return r.unmarshalMsgpack(e, data, ctx)
}

// unmarshalMsgpack decodes data as e's type through msgpack alone, without the fast
// path (which the tests compare with it).
func (r *Registry) unmarshalMsgpack(e *entry, data []byte, ctx any) (any, error) {
	s := decPool.Get().(*decState)
	v, err := decodeEntry(e, s, data, ctx)
	if err == nil {
		decPool.Put(s) // after a failure s may be in any state; let it go
	}
	return v, err
}

// decodeEntry checks data and decodes it as the type of e, in its registered shape.
func decodeEntry(e *entry, s *decState, data []byte, ctx any) (any, error) {
	if err := checkWellFormed(data); err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrDecode, e.name, err)
	}
	p := reflect.New(e.base)
	if err := decode(s, data, p, ctx); err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrDecode, e.name, err)
	}
	if e.ptr {
		return p.Interface(), nil
	}
	return p.Elem().Interface(), nil
}

func decode(s *decState, data []byte, p reflect.Value, ctx any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while decoding: %v", r)
		}
	}()
	s.rd.Reset(data)
	s.rd.ctx = ctx
	defer func() { s.rd.ctx = nil }()
	s.dec.ResetReader(&s.rd)
	if err := s.dec.DecodeValue(p.Elem()); err != nil {
		return err
	}
	if n := s.rd.Len(); n != 0 {
		return fmt.Errorf("%d trailing bytes", n)
	}
	return nil
}

// truncate shortens an untrusted string for an error message.
func truncate(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
