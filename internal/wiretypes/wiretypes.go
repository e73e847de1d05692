package wiretypes

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// Prefix starts every name registered here.
const Prefix = "troupe."

// ErrInvalid is returned by Register for a name without Prefix, a pointer, interface
// or other unencodable type, or a name or type registered twice.
var ErrInvalid = errors.New("wiretypes: invalid registration")

var (
	mu     sync.RWMutex
	byName = map[string]reflect.Type{}
	byType = map[reflect.Type]string{}
)

// Register adds T, a struct or other plain type (not a pointer), under name. Unmarshal
// of name returns a T value; Marshal accepts T and *T.
func Register[T any](name string) error {
	t := reflect.TypeFor[T]()
	switch {
	case !strings.HasPrefix(name, Prefix) || len(name) == len(Prefix):
		return fmt.Errorf("%w: name %q does not start with %q", ErrInvalid, name, Prefix)
	case t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface || t.Kind() == reflect.Func || t.Kind() == reflect.Chan:
		return fmt.Errorf("%w: type %v", ErrInvalid, t)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := byName[name]; dup {
		return fmt.Errorf("%w: name %q registered twice", ErrInvalid, name)
	}
	if _, dup := byType[t]; dup {
		return fmt.Errorf("%w: type %v registered twice", ErrInvalid, t)
	}
	byName[name], byType[t] = t, name
	return nil
}

// MustRegister is Register for init functions: a failure is a programming error in
// Troupe and panics.
func MustRegister[T any](name string) {
	if err := Register[T](name); err != nil {
		panic(err)
	}
}

// Lookup returns the type registered under name.
func Lookup(name string) (reflect.Type, bool) {
	mu.RLock()
	defer mu.RUnlock()
	t, ok := byName[name]
	return t, ok
}

// NameOf returns the name of t, or of the type t points to.
func NameOf(t reflect.Type) (string, bool) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	mu.RLock()
	defer mu.RUnlock()
	n, ok := byType[t]
	return n, ok
}

// Reserved reports whether name is in the namespace of Troupe's own types.
func Reserved(name string) bool { return strings.HasPrefix(name, Prefix) }
