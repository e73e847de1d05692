package serialization

import (
	"fmt"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// Codec encodes and decodes registered values for one goroutine at a time, with a
// context for custom codecs (see EncoderContext and DecoderContext). It is what a
// transport keeps per connection: unlike Marshal and Unmarshal it takes nothing from a
// pool, and it remembers the last type it encoded and the last manifest it decoded, so
// a stream of one message type costs no lookups (a registration, once made, never
// changes or goes away, so what it remembers stays true). A flat struct of numbers, booleans, strings and byte slices is
// encoded and decoded without msgpack's reflection, to the same bytes and values
// (see fastpath.go). A Codec is not safe for concurrent use.
type Codec struct {
	reg  *Registry
	ctx  any
	enc  encState
	dec  decState
	last *entry // the entry of the last manifest decoded

	encType  reflect.Type // the type of the last value encoded
	encEntry *entry       // and its entry
}

// NewCodec returns a Codec for r whose custom codecs see ctx.
func (r *Registry) NewCodec(ctx any) *Codec {
	c := &Codec{reg: r, ctx: ctx}
	c.enc.enc = msgpack.NewEncoder(&c.enc.w)
	c.enc.enc.UseCompactInts(true)
	c.dec.dec = msgpack.NewDecoder(&c.dec.rd)
	return c
}

// Append is AppendMarshal with the Codec's context.
func (c *Codec) Append(dst []byte, v any) (manifest string, out []byte, err error) {
	e, err := c.entryOf(v)
	if err != nil {
		return "", dst, err
	}
	if e.fast != nil {
		if out, ok := e.fast.appendValue(dst, v); ok {
			return e.name, out, nil
		}
	}
	out, err = encode(&c.enc, dst, v, c.ctx)
	if err != nil {
		c.enc.enc = msgpack.NewEncoder(&c.enc.w) // its state is unknown after a failure
		c.enc.enc.UseCompactInts(true)
		return "", dst, encodeError(e, v, err)
	}
	return e.name, out, nil
}

// entryOf is the registry's entryOf, remembering the last type found.
func (c *Codec) entryOf(v any) (*entry, error) {
	if t := reflect.TypeOf(v); t != nil && t == c.encType {
		if err := nilPointer(t, v); err != nil {
			return nil, err
		}
		return c.encEntry, nil
	}
	e, err := c.reg.entryOf(v)
	if err == nil {
		c.encType, c.encEntry = reflect.TypeOf(v), e
	}
	return e, err
}

// Decode is UnmarshalContext with the Codec's context. As there, the value returned
// does not alias data: the caller may reuse data's memory at once.
func (c *Codec) Decode(manifest string, data []byte) (any, error) {
	e := c.last
	if e == nil || e.name != manifest {
		var ok bool
		if e, ok = c.reg.byName(manifest); !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownManifest, truncate(manifest))
		}
		c.last = e
	}
	if e.fast != nil {
		if v, ok := e.fast.decode(data, e.ptr); ok {
			return v, nil
		}
	}
	v, err := decodeEntry(e, &c.dec, data, c.ctx)
	if err != nil {
		c.dec.dec = msgpack.NewDecoder(&c.dec.rd) // its state is unknown after a failure
	}
	return v, err
}
