package serialization

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// them, so callers can classify failures with errors.Is.
var (
	// ErrUnregistered reports that Marshal was given a value whose type was
	// never registered.
	ErrUnregistered = errors.New("serialization: type not registered")

	// ErrUnknownManifest reports that Unmarshal was given a manifest (type
	// name) that no registered type carries.
	ErrUnknownManifest = errors.New("serialization: unknown manifest")

	// ErrDecode reports that Unmarshal was given bytes that are not a
	// well-formed encoding of the manifest's type.
	ErrDecode = errors.New("serialization: cannot decode")

	// ErrEncode reports that a registered value could not be encoded, for
	// example because it holds a channel or a function.
	ErrEncode = errors.New("serialization: cannot encode")

	// ErrNilMessage reports that Marshal was given nil or a nil pointer.
	ErrNilMessage = errors.New("serialization: nil message")

	// ErrInvalidName reports that Register was given a name that does not
	// follow the naming rules (see Register).
	ErrInvalidName = errors.New("serialization: invalid type name")

	// ErrInvalidType reports that Register was given a type that cannot be
	// carried: an interface, a function, a channel, an unsafe pointer, or a
	// pointer to a pointer.
	ErrInvalidType = errors.New("serialization: type cannot be registered")

	// ErrDuplicate reports that Register was given a name or a type that is
	// already registered.
	ErrDuplicate = errors.New("serialization: already registered")
)
