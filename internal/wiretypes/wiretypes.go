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

// ErrInvalid is returned by Register for a name without Prefix, an interface or other
// unencodable type, a pointer to a pointer, or a name or type registered twice.
var ErrInvalid = errors.New("wiretypes: invalid registration")

var (
	mu     sync.RWMutex
	byName = map[string]reflect.Type{} // name -> the registered type (T or *T)
	byType = map[reflect.Type]string{} // the base type (T) -> name
)

// Register adds T under name. T is a plain type (Unmarshal of name returns a T value)
// or a pointer to one (Unmarshal returns a non-nil *T); Marshal accepts T and *T
// either way, as serialization.Register does.
func Register[T any](name string) error {
	t := reflect.TypeFor[T]()
	base := t
	if t.Kind() == reflect.Pointer {
		base = t.Elem()
	}
	switch k := base.Kind(); {
	case !strings.HasPrefix(name, Prefix) || len(name) == len(Prefix):
		return fmt.Errorf("%w: name %q does not start with %q", ErrInvalid, name, Prefix)
	case k == reflect.Pointer || k == reflect.Interface || k == reflect.Func || k == reflect.Chan:
		return fmt.Errorf("%w: type %v", ErrInvalid, t)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := byName[name]; dup {
		return fmt.Errorf("%w: name %q registered twice", ErrInvalid, name)
	}
	if _, dup := byType[base]; dup {
		return fmt.Errorf("%w: type %v registered twice", ErrInvalid, t)
	}
	byName[name], byType[base] = t, name
	return nil
}

// MustRegister is Register for init functions: a failure is a programming error in
// Troupe and panics.
func MustRegister[T any](name string) {
	if err := Register[T](name); err != nil {
		panic(err)
	}
}

// Lookup returns the type registered under name: T, or *T when a pointer was
// registered.
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
