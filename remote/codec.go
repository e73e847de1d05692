package remote

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
)

// Refs inside messages cross the wire as their full paths (Ref.URI) and are resolved
// by the receiving transport: to a local actor, or to a Ref that sends back over the
// wire. The codec is registered with msgpack for actor.Ref and finds the transport
// through the registry's context; outside a transport (for example in a journal) a
// Ref cannot be encoded.
func init() {
	msgpack.Register(actor.Ref{}, encodeRef, decodeRef)
}

var errNoTransport = errors.New("remote: an actor.Ref can only be serialised by the transport")

func encodeRef(enc *msgpack.Encoder, v reflect.Value) error {
	if _, ok := serialization.EncoderContext(enc).(*Remote); !ok {
		return errNoTransport
	}
	ref := v.Interface().(actor.Ref)
	if ref.IsZero() {
		return enc.EncodeString("")
	}
	return enc.EncodeString(ref.URI())
}

func decodeRef(dec *msgpack.Decoder, v reflect.Value) error {
	r, ok := serialization.DecoderContext(dec).(*Remote)
	if !ok {
		return errNoTransport
	}
	s, err := dec.DecodeString()
	if err != nil {
		return err
	}
	if s == "" {
		v.Set(reflect.ValueOf(actor.Ref{}))
		return nil
	}
	if len(s) > maxStringLen {
		return fmt.Errorf("remote: actor path of %d bytes", len(s))
	}
	ref, err := r.refFromURI(s)
	if err != nil {
		return err
	}
	v.Set(reflect.ValueOf(ref))
	return nil
}
