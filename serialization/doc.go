// Package serialization turns registered Go values into bytes and back, under
// stable type names.
//
// A Registry maps each message or event type to a name chosen by the
// application, such as "counter.Incremented.v1". The name, called the
// manifest, is stored or sent next to the bytes, and the receiving side uses
// it to pick the Go type to decode into. Go package paths never appear in the
// data, so types can move between packages without breaking stored journals
// or mixed-version clusters.
//
// The encoding is msgpack (github.com/vmihailenco/msgpack/v5) with structs
// encoded as maps keyed by field name (or by the `msgpack` struct tag).
// Fields added to a type are therefore zero when old data is read, and
// unknown fields in new data are ignored when an old binary reads it.
//
// Troupe's persistence uses a Registry for events and snapshots, and remote
// messaging uses the same Registry for messages on the wire; this package
// imports neither. Get(sys) returns the registry a running system's transport
// uses (remote.Start attaches it), for code that serializes messages itself.
//
// # Values and pointers
//
// Register[Foo] makes Unmarshal return Foo values; Register[*Foo] makes it
// return non-nil *Foo pointers. In both cases Marshal accepts Foo and *Foo
// and produces the same bytes. Registering both Foo and *Foo is an error.
//
// # Actor references
//
// An actor.Ref inside a value is encoded as its full path (actor.Ref.URI) and
// decoded through the RefResolver given as the context (UnmarshalContext,
// NewCodec): the remote transport resolves to local actors or to Refs that send
// over the wire, persistence resolves in its system. Without a resolver a value
// holding a non-zero Ref does not decode (ErrDecode).
//
// # Untrusted input
//
// Unmarshal is meant for bytes read from disk or from the network. It only
// allocates the type registered under the manifest, it checks the input's
// structure before decoding (lengths, nesting depth, extension types), and
// it reports every failure as an error wrapping ErrUnknownManifest or
// ErrDecode; it never panics. Fields of interface type decode into generic
// values (maps, slices, strings, numbers, time.Time), never into named types.
package serialization
