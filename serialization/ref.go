package serialization

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/troupe-go/troupe/actor"
	"github.com/vmihailenco/msgpack/v5"
)

// RefResolver turns the full path of an actor (actor.Ref.URI) back into a Ref. A
// value that holds an actor.Ref decodes only with a RefResolver as its context
// (UnmarshalContext, NewCodec): the remote transport is one, and persistence resolves
// in its own system.
type RefResolver interface {
	ResolveRef(uri string) (actor.Ref, error)
}

// An actor.Ref inside a message, event or snapshot is stored as its full path
// (troupe://system@host:port/user/a#uid), the zero Ref as "". Encoding needs no
// context; decoding asks the context's RefResolver.
func init() {
	msgpack.Register(actor.Ref{}, encodeRef, decodeRef)
}

// errNoResolver is returned when a Ref is decoded without a RefResolver.
var errNoResolver = errors.New("an actor.Ref decodes only with a RefResolver as the context")

func encodeRef(enc *msgpack.Encoder, v reflect.Value) error {
	ref := v.Interface().(actor.Ref)
	if ref.IsZero() {
		return enc.EncodeString("")
	}
	return enc.EncodeString(ref.URI())
}

func decodeRef(dec *msgpack.Decoder, v reflect.Value) error {
	s, err := dec.DecodeString()
	if err != nil {
		return err
	}
	if s == "" {
		v.Set(reflect.ValueOf(actor.Ref{}))
		return nil
	}
	r, ok := DecoderContext(dec).(RefResolver)
	if !ok {
		return errNoResolver
	}
	if len(s) > maxRefLen {
		return fmt.Errorf("actor path of %d bytes", len(s))
	}
	ref, err := r.ResolveRef(s)
	if err != nil {
		return err
	}
	v.Set(reflect.ValueOf(ref))
	return nil
}

// maxRefLen bounds an actor path in encoded data.
const maxRefLen = 4096
