package wiretypes_test

import (
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/troupe-go/troupe/internal/wiretypes"
)

type ping struct{ N int }
type pong struct{ N int }
type state struct{ N int }

// register registers the test's types once per process: the table is process-wide,
// and the test runs again with -count.
var register = sync.OnceValue(func() error {
	return errors.Join(wiretypes.Register[ping]("troupe.test.Ping"), wiretypes.Register[*state]("troupe.test.State"))
})

func TestRegister(t *testing.T) {
	if err := register(); err != nil {
		t.Fatal(err)
	}
	bad := []error{
		wiretypes.Register[pong]("test.Pong"),
		wiretypes.Register[pong]("troupe."),
		wiretypes.Register[**pong]("troupe.test.PongPtrPtr"),
		wiretypes.Register[pong]("troupe.test.Ping"),
		wiretypes.Register[ping]("troupe.test.Ping2"),
	}
	for i, err := range bad {
		if !errors.Is(err, wiretypes.ErrInvalid) {
			t.Errorf("%d: %v", i, err)
		}
	}
	if typ, ok := wiretypes.Lookup("troupe.test.Ping"); !ok || typ != reflect.TypeFor[ping]() {
		t.Errorf("Lookup = %v %v", typ, ok)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[ping](), reflect.TypeFor[*ping]()} {
		if n, ok := wiretypes.NameOf(typ); !ok || n != "troupe.test.Ping" {
			t.Errorf("NameOf(%v) = %q %v", typ, n, ok)
		}
	}
	if _, ok := wiretypes.NameOf(reflect.TypeFor[pong]()); ok {
		t.Error("unregistered type has a name")
	}
	// A pointer registration: Lookup gives the pointer type, NameOf knows both forms.
	if typ, ok := wiretypes.Lookup("troupe.test.State"); !ok || typ != reflect.TypeFor[*state]() {
		t.Errorf("Lookup = %v %v", typ, ok)
	}
	if n, ok := wiretypes.NameOf(reflect.TypeFor[state]()); !ok || n != "troupe.test.State" {
		t.Errorf("NameOf(state) = %q %v", n, ok)
	}
	if !wiretypes.Reserved("troupe.x") || wiretypes.Reserved("shop.x") {
		t.Error("Reserved")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a duplicate did not panic")
		}
	}()
	wiretypes.MustRegister[ping]("troupe.test.Ping")
}
