package ddata

import (
	"fmt"
	"reflect"
)

// Key names one replicated value and carries its type, so that a value stored as a
// counter cannot be read as a set:
//
//	cart := ddata.NewKey[*ddata.ORSet[string]]("cart-42")
//
// T is the pointer type the replicator holds (*GCounter, *ORSet[string], a user's
// *MyCRDT). Two Keys are the same key when their ids are equal; the replicator
// refuses to use one id with two types (compare DataType).
type Key[T ReplicatedData] struct {
	id string
}

// NewKey returns the key with the given id for values of type T.
func NewKey[T ReplicatedData](id string) Key[T] {
	return Key[T]{id: id}
}

// ID returns the key's id.
func (k Key[T]) ID() string { return k.id }

// DataType returns T, the type of the key's values.
func (k Key[T]) DataType() reflect.Type { return reflect.TypeFor[T]() }

// TypeName returns T's name as Go prints it (for example
// "*ddata.ORSet[string]"), for messages and logs. Compare DataType, not names, to
// check that two keys agree.
func (k Key[T]) TypeName() string { return reflect.TypeFor[T]().String() }

// String returns "id (type)".
func (k Key[T]) String() string { return k.id + " (" + k.TypeName() + ")" }

// Cast returns d as T. A value of another type (including nil) is an error wrapping
// ErrTypeMismatch.
func (k Key[T]) Cast(d ReplicatedData) (T, error) {
	v, ok := d.(T)
	if !ok || d == nil {
		var zero T
		return zero, fmt.Errorf("%w: key %q holds %s, got %T", ErrTypeMismatch, k.id, k.TypeName(), d)
	}
	return v, nil
}

func (k Key[T]) anyKey() {}

// AnyKey is a Key of any type, for code that handles keys without knowing their
// type (the replicator's tables, messages). Only Key implements it.
type AnyKey interface {
	// ID returns the key's id.
	ID() string
	// DataType returns the type of the key's values.
	DataType() reflect.Type
	// TypeName returns the type's name for messages and logs.
	TypeName() string
	// String returns "id (type)".
	String() string
	anyKey()
}

var _ AnyKey = Key[*GCounter]{}
